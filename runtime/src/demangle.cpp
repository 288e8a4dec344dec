#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "grain/detail/task.hpp"

namespace grain::detail {

std::string demangle(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> p(abi::__cxa_demangle(mangled, nullptr, nullptr, &status),
                                           std::free);
  std::string s = status == 0 && p ? p.get() : mangled;
  // Drop the noise of lambdas' "{lambda()#1}" decorations only where it is pure decoration.
  return s;
}

}  // namespace grain::detail
