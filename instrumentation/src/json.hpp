#pragma once
// The JSON the summary and the calibration file need: quoting, numbers and a small parser
// (json.cpp).
#include <string>
#include <string_view>
#include <vector>

namespace grain::instrumentation::detail {

std::string json_string(std::string_view s);  // quoted and escaped
std::string json_number(double v);            // shortest round-trip; null if not finite

struct json_member;
struct json_value {
  enum type { null, boolean, number, string, array, object } t = null;
  bool b = false;
  double n = 0;
  std::string s;
  std::vector<json_value> a;
  // Not std::pair<std::string, json_value>: a pair needs its members complete, and json_value
  // is not yet (g++ instantiates it late enough, clang does not); vector allows it.
  std::vector<json_member> o;
  const json_value* get(std::string_view key) const noexcept;
};
struct json_member {
  std::string first;
  json_value second;
};
// Throws std::runtime_error with the byte offset of the error.
json_value json_parse(std::string_view text);

}  // namespace grain::instrumentation::detail
