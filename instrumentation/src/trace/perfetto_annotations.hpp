#pragma once
// A Perfetto debug annotation (a named value of a track event: what the UI shows as the event's
// arguments), one function per value type, for the Perfetto back end's decisions, messages,
// point events and re-entries.
#include <cstdint>
#include <string>

#include "perfetto_fields.hpp"
#include "perfetto_wire.hpp"

namespace grain::instrumentation::trace_detail::perfetto {

inline void annotation(std::string& out, const std::string& name, const std::string& v) {
  auto a = pb::open(out, f::debug_annotations);
  pb::put_string(out, f::annotation_name, name);
  pb::put_string(out, f::string_value, v);
  pb::close(out, a);
}

inline void annotation(std::string& out, const std::string& name, double v) {
  auto a = pb::open(out, f::debug_annotations);
  pb::put_string(out, f::annotation_name, name);
  pb::put_double(out, f::double_value, v);
  pb::close(out, a);
}

inline void annotation_uint(std::string& out, const std::string& name, std::uint64_t v) {
  auto a = pb::open(out, f::debug_annotations);
  pb::put_string(out, f::annotation_name, name);
  pb::put_uint(out, f::uint_value, v);
  pb::close(out, a);
}

inline void annotation_int(std::string& out, const std::string& name, std::int64_t v) {
  auto a = pb::open(out, f::debug_annotations);
  pb::put_string(out, f::annotation_name, name);
  pb::put_int(out, f::int_value, v);
  pb::close(out, a);
}

inline void annotation_bool(std::string& out, const std::string& name, bool v) {
  auto a = pb::open(out, f::debug_annotations);
  pb::put_string(out, f::annotation_name, name);
  pb::put_bool(out, f::bool_value, v);
  pb::close(out, a);
}

}  // namespace grain::instrumentation::trace_detail::perfetto
