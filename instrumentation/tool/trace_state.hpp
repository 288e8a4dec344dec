#pragma once
// What grain-trace-read gathers in its one pass over an OTF2 archive (src/trace/otf2_walk.hpp):
// per location span, busy, idle and event count; per region Enter count, distinct GUIDs,
// inclusive and exclusive time; the decisions (policy:<rule> regions, their attributes and
// Parameter events); with want_metrics the metric samples. The rules are those of
// scripts/grain-trace's python3-otf2 reader (the tests compare the two): busy while a non-idle
// region is open at a location's outermost level, idle while "Idle" is; regions still open at
// the end count until the trace's end. The columnar output (columns.hpp) derives from it and
// keeps every event besides.
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "../src/trace/otf2_walk.hpp"

namespace grain::trace_read {

namespace walk = grain::instrumentation::otf2_walk;
using walk::value;

struct frame {
  std::uint32_t region;  // index into regions
  std::uint64_t start, child;
};

struct location_stats {
  std::uint64_t ref = 0;
  std::string name, type;
  std::uint64_t first = 0, last = 0, events = 0, busy = 0, idle = 0;
  // Task phases (Enter events of task regions without re-entries) and MPI messages.
  std::uint64_t phases = 0, sent = 0, received = 0, sent_bytes = 0, received_bytes = 0;
  std::uint64_t busy_since = 0, idle_since = 0;
  bool seen = false;
  std::vector<frame> stack;
};

struct region_stats {
  std::string name;
  bool idle = false, policy = false;
  std::uint64_t count = 0, total = 0, exclusive = 0;
  std::unordered_set<std::uint64_t> tasks;
};

struct decision {
  std::uint64_t time = 0;
  std::uint32_t location = 0;  // index into locations
  std::vector<std::pair<std::string, value>> attrs;
  std::string rule, reason, knob;
  std::optional<value> old_v, new_v;
};

struct sample {
  std::uint32_t loc;
  std::uint64_t t;
  double v;
};

// The task attributes of the Enter just handled (for consumers that keep each event).
struct entered {
  std::uint32_t region = 0;  // index into regions
  bool reentry = false;
  std::optional<std::uint64_t> guid, parent;
};

class state : public walk::consumer {
 public:
  bool want_metrics = false;
  std::uint64_t resolution = 0, offset = 0, length = 0;
  std::string command, start_time;  // grain's trace properties, when present
  std::unordered_map<std::uint32_t, std::string> parameters;
  std::unordered_map<std::uint32_t, std::pair<std::string, std::string>> members;  // name, unit
  std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> classes;           // -> members
  std::unordered_map<std::uint32_t, std::uint32_t> region_index;  // OTF2 region -> regions
  std::vector<std::string> region_names;                          // by OTF2 region ref order
  std::unordered_map<std::string, std::uint32_t> stats_index;
  std::vector<region_stats> regions;      // first Enter order
  std::vector<location_stats> locations;  // definition order
  std::unordered_map<std::uint64_t, std::uint32_t> location_index;
  std::vector<decision> decisions;
  decision* pending = nullptr;
  OTF2_AttributeRef guid_attr = ~0u, parent_attr = ~0u, reentry_attr = ~0u, parcels_attr = ~0u;
  std::vector<std::string> metric_names;                          // by member order of appearance
  std::unordered_map<std::uint32_t, std::uint32_t> metric_index;  // member ref -> metric_names
  std::vector<std::vector<sample>> samples;
  entered last_enter;

  // The location's index (into locations), or -1 for an undefined one.
  std::int64_t index_of(OTF2_LocationRef ref) const;
  // The region statistics of an OTF2 region (created at its first Enter).
  std::uint32_t stats_of_region(OTF2_RegionRef r);
  // Closes the regions still open at the end of the trace (after the walk).
  void finish();
  // Called when a frame is closed (at a Leave or by finish): the subclass's hook.
  virtual void closed(location_stats&, std::uint64_t /*t*/) {}

  void clock(std::uint64_t res, std::uint64_t off, std::uint64_t len, std::uint64_t) override;
  void attribute(OTF2_AttributeRef self, const std::string& name, OTF2_Type) override;
  void location(OTF2_LocationRef self, const std::string& name, OTF2_LocationType type,
                std::uint64_t, OTF2_LocationGroupRef) override;
  void region(OTF2_RegionRef self, const std::string& name, OTF2_RegionRole,
              OTF2_Paradigm) override;
  void metric_member(OTF2_MetricMemberRef self, const std::string& name, const std::string& unit,
                     OTF2_MetricMode) override;
  void metric_class(OTF2_MetricRef self, std::uint8_t n, const OTF2_MetricMemberRef* refs) override;
  void metric_instance(OTF2_MetricRef self, OTF2_MetricRef cls) override;
  void parameter(OTF2_ParameterRef self, const std::string& name) override;
  void property(const std::string& name, const std::string& v) override;
  void enter(OTF2_LocationRef loc, OTF2_TimeStamp t, const walk::attributes& a,
             OTF2_RegionRef region) override;
  void leave(OTF2_LocationRef loc, OTF2_TimeStamp t, const walk::attributes&,
             OTF2_RegionRef region) override;
  void metric(OTF2_LocationRef loc, OTF2_TimeStamp t, const walk::attributes&,
              OTF2_MetricRef metric, std::uint8_t n, const OTF2_Type* types,
              const OTF2_MetricValue* values) override;
  void parameter_string(OTF2_LocationRef loc, OTF2_TimeStamp t, const walk::attributes&,
                        OTF2_ParameterRef p, const std::string& text) override;
  void parameter_int(OTF2_LocationRef loc, OTF2_TimeStamp t, const walk::attributes&,
                     OTF2_ParameterRef p, std::int64_t v) override;
  void other_event(OTF2_LocationRef loc, OTF2_TimeStamp t) override;
  void mpi_message(OTF2_LocationRef loc, OTF2_TimeStamp t, const walk::attributes&, bool sent,
                   std::uint32_t, std::uint32_t, std::uint64_t bytes) override;

 protected:
  location_stats* touch(OTF2_LocationRef ref, OTF2_TimeStamp t);
  void pop(location_stats& l, std::uint64_t t);

 private:
  std::uint32_t stats_of(const std::string& name);
};

}  // namespace grain::trace_read
