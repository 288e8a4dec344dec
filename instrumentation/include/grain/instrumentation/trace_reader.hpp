#pragma once
// Read an OTF2 archive into memory (tests, small tools). Reads any OTF2 archive, not only the
// ones grain writes; only the records grain uses are kept (Enter, Leave, Metric, Parameter*).
// Meant for small traces: every event is held in memory.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace grain::instrumentation {

struct otf2_attribute {
  std::string name;
  std::variant<std::uint64_t, std::int64_t, double, std::string> value;
  std::optional<std::uint64_t> as_uint() const;  // unsigned or non-negative signed values
  std::optional<double> as_double() const;       // any number
};

struct otf2_event {
  enum class kind { enter, leave, metric, parameter_string, parameter_int, other };
  kind type = kind::other;
  std::uint64_t time = 0;
  std::uint32_t ref = 0;  // region (enter/leave), metric class, parameter
  std::string name;       // region, metric member or parameter name
  double value = 0;       // metric (first member) or parameter_int
  std::string text;       // parameter_string
  std::vector<otf2_attribute> attributes;
  const otf2_attribute* attribute(std::string_view n) const;
};

struct otf2_location {
  std::uint64_t id = 0;
  std::string name;
  std::string type;  // "CPU_THREAD", "METRIC", "ACCELERATOR_STREAM", "UNKNOWN"
  std::uint64_t group = 0;
  std::uint64_t declared_events = 0;  // numberOfEvents in the definition
  std::vector<otf2_event> events;     // in file order
};

struct otf2_region {
  std::string name;
  std::string role;  // "TASK", "ARTIFICIAL", "FUNCTION", ...
  std::string paradigm;
};

struct otf2_metric {
  std::string name;
  std::string unit;
  std::string mode;  // "ABSOLUTE_POINT", "ACCUMULATED_START", "ABSOLUTE_NEXT", ...
};

struct otf2_trace {
  std::uint64_t resolution = 0;
  std::uint64_t global_offset = 0;
  std::uint64_t trace_length = 0;
  std::uint64_t realtime = 0;
  std::map<std::uint64_t, otf2_location> locations;
  std::map<std::uint32_t, otf2_region> regions;
  std::map<std::uint32_t, otf2_metric> metrics;  // by metric class (first member)

  const otf2_location* location(std::string_view name) const;
};

// Throws std::runtime_error when the archive cannot be read.
otf2_trace read_otf2(const std::string& anchor_file);

}  // namespace grain::instrumentation
