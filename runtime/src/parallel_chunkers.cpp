// Chunker names: what --chunker= options, logs and docs call them.
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <string>

#include "grain/knob.hpp"
#include "grain/parallel/chunkers.hpp"

namespace grain::execution {
namespace {

const char* const accepted =
    "static[:N], dynamic[:N], guided[:MIN], auto[:TARGET] (TARGET like 200us, 1ms or ns), "
    "adaptive[:LAMBDA], knob:NAME";

[[noreturn]] void bad(std::string_view text, const char* why) {
  throw std::invalid_argument("grain: chunker '" + std::string(text) + "': " + why + "; use " +
                              accepted);
}

std::size_t parse_count(std::string_view whole, std::string_view v) {
  std::size_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc{} || p != v.data() + v.size()) bad(whole, "the size is not a count");
  return n;
}

// "200us", "1ms", "5000" (ns), "2s".
std::uint64_t parse_duration_ns(std::string_view whole, std::string_view v) {
  double x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc{} || x <= 0) bad(whole, "the target is not a positive duration");
  std::string_view unit(p, static_cast<std::size_t>(v.data() + v.size() - p));
  double scale = 0;
  if (unit.empty() || unit == "ns")
    scale = 1;
  else if (unit == "us")
    scale = 1e3;
  else if (unit == "ms")
    scale = 1e6;
  else if (unit == "s")
    scale = 1e9;
  else
    bad(whole, "unknown time unit (ns, us, ms, s)");
  return static_cast<std::uint64_t>(std::llround(x * scale));
}

std::string format_ns(std::uint64_t ns) {
  if (ns % 1'000'000 == 0) return std::to_string(ns / 1'000'000) + "ms";
  if (ns % 1'000 == 0) return std::to_string(ns / 1'000) + "us";
  return std::to_string(ns) + "ns";
}

}  // namespace

std::string chunker::name() const {
  switch (kind) {
    case chunk_kind::static_:
      return "static:" + std::to_string(size);
    case chunk_kind::dynamic:
      return "dynamic:" + std::to_string(size);
    case chunk_kind::guided:
      return "guided:" + std::to_string(size);
    case chunk_kind::auto_:
      return target_ns == auto_chunk_size{}.target_ns ? std::string("auto")
                                                      : "auto:" + format_ns(target_ns);
    case chunk_kind::adaptive: {
      if (lambda < 0) return "adaptive";
      std::string l = std::to_string(lambda);
      while (l.size() > 1 && l.back() == '0') l.pop_back();
      if (l.back() == '.') l.pop_back();
      return "adaptive:" + l;
    }
    case chunk_kind::knob:
      return "knob:" + (size_knob ? size_knob->name() : std::string("?"));
  }
  return "?";
}

chunker parse_chunker(std::string_view text) {
  const auto colon = text.find(':');
  const std::string_view kind = text.substr(0, colon);
  const bool has_arg = colon != std::string_view::npos;
  const std::string_view arg = has_arg ? text.substr(colon + 1) : std::string_view{};
  if (has_arg && arg.empty()) bad(text, "empty value after ':'");
  if (kind == "static") return static_chunk_size(has_arg ? parse_count(text, arg) : 0);
  if (kind == "dynamic") {
    const std::size_t n = has_arg ? parse_count(text, arg) : 1;
    if (n == 0) bad(text, "a dynamic chunk must have at least 1 iteration");
    return dynamic_chunk_size(n);
  }
  if (kind == "guided") {
    const std::size_t n = has_arg ? parse_count(text, arg) : 1;
    if (n == 0) bad(text, "a guided minimum must be at least 1 iteration");
    return guided_chunk_size(n);
  }
  if (kind == "auto")
    return has_arg ? auto_chunk_size(parse_duration_ns(text, arg)) : auto_chunk_size();
  if (kind == "adaptive") {
    if (!has_arg) return adaptive_chunk_size();
    double l = -1;
    auto [p, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), l);
    if (ec != std::errc{} || p != arg.data() + arg.size() || l < 0)
      bad(text, "lambda must be a number >= 0");
    return adaptive_chunk_size(l);
  }
  if (kind == "knob") {
    if (!has_arg) bad(text, "name the knob whose value is the chunk size (knob:NAME)");
    const knob* k = knobs().find(arg);
    if (!k) bad(text, "no knob of that name is defined");
    if (k->type() == knob_type::enumeration) bad(text, "the knob is an enumeration, not a size");
    return knob_chunk_size(*k);
  }
  bad(text, "unknown chunker");
}

}  // namespace grain::execution
