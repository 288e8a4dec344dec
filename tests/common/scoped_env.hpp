#pragma once
// Sets an environment variable for the lifetime of the object, restoring the old value.
#include <cstdlib>
#include <optional>
#include <string>

namespace grain::test {

class scoped_env {
 public:
  // value == nullptr unsets the variable.
  scoped_env(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~scoped_env() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace grain::test
