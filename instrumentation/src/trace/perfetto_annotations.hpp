#pragma once
// A Perfetto debug annotation (a named value of a track event: what the UI shows as the event's
// arguments), one function per value type, for the Perfetto back end's decisions, messages,
// point events and re-entries.
#include <cstdint>
#include <string>

#include "perfetto_fields.hpp"
#include "perfetto_wire.hpp"

namespace grain::instrumentation::trace_detail::perfetto {

// One annotation: its name, then the value `put` writes.
template <class Put>
void annotation_of(std::string& out, const std::string& name, Put put) {
  auto a = pb::open(out, f::debug_annotations);
  pb::put_string(out, f::annotation_name, name);
  put();
  pb::close(out, a);
}

inline void annotation(std::string& out, const std::string& name, const std::string& v) {
  annotation_of(out, name, [&] { pb::put_string(out, f::string_value, v); });
}
inline void annotation(std::string& out, const std::string& name, double v) {
  annotation_of(out, name, [&] { pb::put_double(out, f::double_value, v); });
}
inline void annotation_uint(std::string& out, const std::string& name, std::uint64_t v) {
  annotation_of(out, name, [&] { pb::put_uint(out, f::uint_value, v); });
}
inline void annotation_int(std::string& out, const std::string& name, std::int64_t v) {
  annotation_of(out, name, [&] { pb::put_int(out, f::int_value, v); });
}
inline void annotation_bool(std::string& out, const std::string& name, bool v) {
  annotation_of(out, name, [&] { pb::put_bool(out, f::bool_value, v); });
}

}  // namespace grain::instrumentation::trace_detail::perfetto
