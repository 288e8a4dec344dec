#pragma once
// Command-line and environment options of the form --grain:NAME[=VALUE] / GRAIN_NAME=VALUE.
// Components declare the options they understand; anything else under --grain: is an error
// that lists the valid names. Arguments that do not start with --grain: belong to the app.
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace grain {

struct option_spec {
  std::string name;         // without the "--grain:" prefix, e.g. "threads"
  std::string help;         // one line
  bool takes_value = true;  // false: a flag (--grain:list-counters)
  // --grain:policy=a.lua --grain:policy=b.lua, or --grain:policy=a.lua,b.lua: a repeatable
  // option also takes a ','-separated list, so that its environment variable can hold several.
  bool repeatable = false;
  std::string value_hint = "VALUE";
};

class option_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class options {
 public:
  // Parse argv against `specs`. Environment variables GRAIN_<NAME> (upper case, '-' -> '_')
  // supply values for options not given on the command line; for a repeatable option the
  // variable holds a list separated by ',' (as on the command line) or ';'. `argc`/`argv` are
  // compacted in place so that only the application's arguments remain. Throws option_error.
  void parse(int& argc, char** argv, const std::vector<option_spec>& specs);
  // Parse a list of "--grain:..." strings (tests, grain::init with a vector).
  void parse(const std::vector<std::string>& args, const std::vector<option_spec>& specs,
             bool use_environment = true);

  bool has(std::string_view name) const;
  std::string get(std::string_view name, std::string_view fallback = "") const;
  std::vector<std::string> get_all(std::string_view name) const;
  // Integer with range check; throws option_error naming the option and the range.
  long long get_int(std::string_view name, long long fallback, long long min, long long max) const;

  // "GRAIN_PRINT_COUNTER" for "print-counter".
  static std::string env_name(std::string_view option);
  static std::string usage(const std::vector<option_spec>& specs);
  // "0.1.0": the project version grain was built as.
  static const char* version() noexcept;

 private:
  std::map<std::string, std::vector<std::string>, std::less<>> values_;
};

}  // namespace grain
