// read_otf2: an OTF2 archive in memory (tests and small tools), one consumer of the shared
// OTF2 pass (otf2_walk.hpp) that keeps every event.
#include <stdexcept>

#include "grain/instrumentation/trace_reader.hpp"
#if GRAIN_WITH_OTF2  // CMake GRAIN_WITH_OTF2
#include "otf2_walk.hpp"
#endif

namespace grain::instrumentation {
#if GRAIN_WITH_OTF2
namespace {

const char* role_name(OTF2_RegionRole r) {
  switch (r) {
    case OTF2_REGION_ROLE_FUNCTION:
      return "FUNCTION";
    case OTF2_REGION_ROLE_TASK:
      return "TASK";
    case OTF2_REGION_ROLE_ARTIFICIAL:
      return "ARTIFICIAL";
    case OTF2_REGION_ROLE_LOOP:
      return "LOOP";
    case OTF2_REGION_ROLE_CODE:
      return "CODE";
    default:
      return "OTHER";
  }
}

const char* mode_name(OTF2_MetricMode m) {
  switch (m) {
    case OTF2_METRIC_ACCUMULATED_START:
      return "ACCUMULATED_START";
    case OTF2_METRIC_ACCUMULATED_POINT:
      return "ACCUMULATED_POINT";
    case OTF2_METRIC_ACCUMULATED_LAST:
      return "ACCUMULATED_LAST";
    case OTF2_METRIC_ACCUMULATED_NEXT:
      return "ACCUMULATED_NEXT";
    case OTF2_METRIC_ABSOLUTE_POINT:
      return "ABSOLUTE_POINT";
    case OTF2_METRIC_ABSOLUTE_LAST:
      return "ABSOLUTE_LAST";
    case OTF2_METRIC_ABSOLUTE_NEXT:
      return "ABSOLUTE_NEXT";
    default:
      return "OTHER";
  }
}

const char* location_type(OTF2_LocationType type) {
  return type == OTF2_LOCATION_TYPE_CPU_THREAD           ? "CPU_THREAD"
         : type == OTF2_LOCATION_TYPE_METRIC             ? "METRIC"
         : type == OTF2_LOCATION_TYPE_ACCELERATOR_STREAM ? "ACCELERATOR_STREAM"
                                                         : "UNKNOWN";
}

class in_memory final : public otf2_walk::consumer {
 public:
  otf2_trace t;

  void clock(std::uint64_t res, std::uint64_t off, std::uint64_t len, std::uint64_t rt) override {
    t.resolution = res;
    t.global_offset = off;
    t.trace_length = len;
    t.realtime = rt;
  }
  void location(OTF2_LocationRef self, const std::string& name, OTF2_LocationType type,
                std::uint64_t n, OTF2_LocationGroupRef group) override {
    auto& l = t.locations[self];
    l.id = self;
    l.name = name;
    l.type = location_type(type);
    l.group = group;
    l.declared_events = n;
  }
  void region(OTF2_RegionRef self, const std::string& name, OTF2_RegionRole role,
              OTF2_Paradigm paradigm) override {
    t.regions[self] = {name, role_name(role),
                       paradigm == OTF2_PARADIGM_USER ? "USER" : std::to_string(paradigm)};
  }
  void metric_member(OTF2_MetricMemberRef self, const std::string& name, const std::string& unit,
                     OTF2_MetricMode mode) override {
    members_[self] = {name, unit, mode_name(mode)};
  }
  void metric_class(OTF2_MetricRef self, std::uint8_t n,
                    const OTF2_MetricMemberRef* members) override {
    if (n == 0) return;
    auto it = members_.find(members[0]);
    if (it != members_.end()) t.metrics[self] = it->second;
  }
  void parameter(OTF2_ParameterRef self, const std::string& name) override {
    parameters_[self] = name;
  }

  void enter(OTF2_LocationRef loc, OTF2_TimeStamp time, const otf2_walk::attributes& a,
             OTF2_RegionRef region) override {
    auto& e = add(loc, time, a, otf2_event::kind::enter);
    e.ref = region;
    e.name = t.regions[region].name;
  }
  void leave(OTF2_LocationRef loc, OTF2_TimeStamp time, const otf2_walk::attributes& a,
             OTF2_RegionRef region) override {
    auto& e = add(loc, time, a, otf2_event::kind::leave);
    e.ref = region;
    e.name = t.regions[region].name;
  }
  void metric(OTF2_LocationRef loc, OTF2_TimeStamp time, const otf2_walk::attributes& a,
              OTF2_MetricRef metric, std::uint8_t n, const OTF2_Type* types,
              const OTF2_MetricValue* values) override {
    auto& e = add(loc, time, a, otf2_event::kind::metric);
    e.ref = metric;
    auto it = t.metrics.find(metric);
    e.name = it != t.metrics.end() ? it->second.name : "metric " + std::to_string(metric);
    if (n > 0) e.value = otf2_walk::metric_value(types[0], values[0]);
  }
  void parameter_string(OTF2_LocationRef loc, OTF2_TimeStamp time, const otf2_walk::attributes& a,
                        OTF2_ParameterRef p, const std::string& text) override {
    auto& e = add(loc, time, a, otf2_event::kind::parameter_string);
    e.ref = p;
    e.name = parameters_[p];
    e.text = text;
  }
  void parameter_int(OTF2_LocationRef loc, OTF2_TimeStamp time, const otf2_walk::attributes& a,
                     OTF2_ParameterRef p, std::int64_t v) override {
    auto& e = add(loc, time, a, otf2_event::kind::parameter_int);
    e.ref = p;
    e.name = parameters_[p];
    e.value = static_cast<double>(v);
  }

 private:
  otf2_event& add(OTF2_LocationRef loc, OTF2_TimeStamp time, const otf2_walk::attributes& a,
                  otf2_event::kind k) {
    auto& l = t.locations[loc];
    l.id = loc;
    auto& e = l.events.emplace_back();
    e.type = k;
    e.time = time;
    for (std::uint32_t i = 0, n = a.size(); i < n; ++i) {
      OTF2_AttributeRef ref;
      otf2_attribute at;
      if (!a.get(i, ref, at.value)) continue;
      at.name = a.name(ref);
      e.attributes.push_back(std::move(at));
    }
    return e;
  }

  std::map<std::uint32_t, std::string> parameters_;
  std::map<std::uint32_t, otf2_metric> members_;
};

}  // namespace
#endif  // GRAIN_WITH_OTF2

std::optional<std::uint64_t> otf2_attribute::as_uint() const {
  if (auto* u = std::get_if<std::uint64_t>(&value)) return *u;
  if (auto* i = std::get_if<std::int64_t>(&value); i && *i >= 0)
    return static_cast<std::uint64_t>(*i);
  return std::nullopt;
}

std::optional<double> otf2_attribute::as_double() const {
  if (auto* u = std::get_if<std::uint64_t>(&value)) return static_cast<double>(*u);
  if (auto* i = std::get_if<std::int64_t>(&value)) return static_cast<double>(*i);
  if (auto* d = std::get_if<double>(&value)) return *d;
  return std::nullopt;
}

const otf2_attribute* otf2_event::attribute(std::string_view n) const {
  for (auto& a : attributes)
    if (a.name == n) return &a;
  return nullptr;
}

const otf2_location* otf2_trace::location(std::string_view name) const {
  for (auto& [id, l] : locations)
    if (l.name == name) return &l;
  return nullptr;
}

otf2_trace read_otf2(const std::string& anchor) {
#if GRAIN_WITH_OTF2
  in_memory m;
  otf2_walk::walker().walk(anchor, m);
  return std::move(m.t);
#else
  throw std::runtime_error(
      "cannot read " + anchor +
      ": OTF2 is not built in (grain was configured with GRAIN_WITH_OTF2=OFF)");
#endif
}

}  // namespace grain::instrumentation
