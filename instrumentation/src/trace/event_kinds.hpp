#pragma once
// The trace's point events off the task path: one row per kind, and the record every back end
// writes the same way from its row, so that a new kind is a row here and the one call that
// records it (session_core::record_event, where the event is seen), with no back end to change.
// On the "policy engine" location, where the rules that answer events decide:
//   OTF2      a ParameterString "event" whose value is "<prefix>:<name>", the fields as double
//             attributes "<prefix>:<field>" (otf2_backend.cpp)
//   Perfetto  an instant named "<prefix>:<name>", the fields as debug annotations
//   Chrome    an "i" event of category <prefix>, the fields as args
// The records on the task path itself (a task phase begins or ends, a worker idles) are not
// rows here: they are compact per-worker records (record.hpp, design/tracing-records.md).
#include <cstdint>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace grain::instrumentation::trace_detail {

enum class event_kind : std::uint8_t {
  app,  // grain::event(name, payload): the program's events and the runtime's start and stop
};

struct event_kind_row {
  event_kind kind;
  const char* prefix;  // the events' names are "<prefix>:<name>"
  const char* what;    // what an event of this kind says (docs/tracing.md, "Point events")
};

inline constexpr event_kind_row event_kinds[] = {
    {event_kind::app, "event", "an application event: grain::event(name, payload)"},
};

constexpr const event_kind_row& row_of(event_kind k) noexcept {
  return event_kinds[static_cast<unsigned>(k)];
}
static_assert(
    [] {
      for (unsigned i = 0; i < std::size(event_kinds); ++i)
        if (static_cast<unsigned>(event_kinds[i].kind) != i) return false;
      return true;
    }(),
    "event_kinds lists the kinds in their enum's order");

// One event: its kind, its own name ("iteration") and its values.
struct event_record {
  event_kind kind = event_kind::app;
  std::string name;
  std::vector<std::pair<std::string, double>> fields;

  std::string full_name() const { return std::string(row_of(kind).prefix) + ":" + name; }
  std::string field_name(const std::string& field) const {
    return std::string(row_of(kind).prefix) + ":" + field;
  }
};

}  // namespace grain::instrumentation::trace_detail
