#pragma once
// The comparison of a counter trigger (grain.when's operator). Its own type, not an int, so
// that parsing the operator, printing it in the rule's trigger text and evaluating it cannot
// disagree about which number means which operator.
#include <optional>
#include <string_view>

namespace grain::policy {

enum class comparison { less, less_equal, greater, greater_equal, equal, not_equal };

// "<", "<=", ">", ">=", "==", "~=" (and "!=" for ~=); nullopt for anything else.
inline std::optional<comparison> parse_comparison(std::string_view s) {
  if (s == "<") return comparison::less;
  if (s == "<=") return comparison::less_equal;
  if (s == ">") return comparison::greater;
  if (s == ">=") return comparison::greater_equal;
  if (s == "==") return comparison::equal;
  if (s == "~=" || s == "!=") return comparison::not_equal;
  return std::nullopt;
}

inline const char* symbol(comparison c) {
  switch (c) {
    case comparison::less:
      return "<";
    case comparison::less_equal:
      return "<=";
    case comparison::greater:
      return ">";
    case comparison::greater_equal:
      return ">=";
    case comparison::equal:
      return "==";
    case comparison::not_equal:
      break;
  }
  return "~=";
}

inline bool holds(comparison c, double a, double b) {
  switch (c) {
    case comparison::less:
      return a < b;
    case comparison::less_equal:
      return a <= b;
    case comparison::greater:
      return a > b;
    case comparison::greater_equal:
      return a >= b;
    case comparison::equal:
      return a == b;
    case comparison::not_equal:
      break;
  }
  return a != b;
}

}  // namespace grain::policy
