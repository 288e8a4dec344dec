// Short task names for traces (task_names.hpp).
#include "task_names.hpp"

namespace grain::instrumentation::trace_detail {

namespace {

// NAME with the inside of every outermost open...close pair that is not empty replaced by
// "...": "f(int, long)::{lambda(a const&)#1}" -> "f(...)::{lambda(...)#1}" for '(' and ')'.
std::string collapse(std::string_view name, char open, char close) {
  std::string out;
  out.reserve(name.size());
  int depth = 0;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == open) {
      if (depth++ == 0) {
        out += c;
        if (i + 1 < name.size() && name[i + 1] != close) out += "...";
      }
    } else if (c == close && depth > 0) {
      if (--depth == 0) out += c;
    } else if (depth == 0) {
      out += c;
    }
  }
  // Unbalanced (an operator< in the name): keep the name as it was.
  return depth == 0 ? out : std::string(name);
}

std::string replace_all(std::string s, std::string_view what, std::string_view with) {
  for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + with.size()))
    s.replace(at, what.size(), with);
  return s;
}

}  // namespace

std::string short_task_name(std::string_view name) {
  std::string s(name);
  if (s.size() <= long_task_name) return s;
  s = replace_all(std::move(s), "(anonymous namespace)", "{anon}");
  if (s.size() > long_task_name) s = collapse(s, '(', ')');
  if (s.size() > long_task_name) s = collapse(s, '<', '>');
  return s;
}

}  // namespace grain::instrumentation::trace_detail
