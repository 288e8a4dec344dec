// grain-trace-read's aggregation while OTF2 decodes (see trace_state.hpp).
#include "trace_state.hpp"

#include <algorithm>
#include <cctype>
#include <variant>

namespace grain::trace_read {

// ---- definitions ----------------------------------------------------------------------------

namespace {

const char* location_type(OTF2_LocationType t) {
  switch (t) {
    case OTF2_LOCATION_TYPE_CPU_THREAD:
      return "CPU_THREAD";
    case OTF2_LOCATION_TYPE_METRIC:
      return "METRIC";
    case OTF2_LOCATION_TYPE_ACCELERATOR_STREAM:
      return "ACCELERATOR_STREAM";
    default:
      return "UNKNOWN";
  }
}

std::optional<std::uint64_t> as_u64(const value& v) {
  if (auto* x = std::get_if<std::uint64_t>(&v)) return *x;
  if (auto* x = std::get_if<std::int64_t>(&v)) return static_cast<std::uint64_t>(*x);
  return std::nullopt;
}

}  // namespace

std::uint32_t state::stats_of(const std::string& name) {
  auto [it, fresh] = stats_index.try_emplace(name, static_cast<std::uint32_t>(regions.size()));
  if (fresh) {
    region_stats r;
    r.name = name;
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    r.idle = lower == "idle";
    r.policy = name.rfind("policy:", 0) == 0;
    regions.push_back(std::move(r));
  }
  return it->second;
}

void state::clock(std::uint64_t res, std::uint64_t off, std::uint64_t len, std::uint64_t) {
  resolution = res;
  offset = off;
  length = len;
}
void state::attribute(OTF2_AttributeRef self, const std::string& name, OTF2_Type) {
  if (name == "GUID") guid_attr = self;
  if (name == "Parent GUID") parent_attr = self;
  if (name == "Resumed inline child") reentry_attr = self;
  if (name == "parcels") parcels_attr = self;
}
void state::location(OTF2_LocationRef self, const std::string& name, OTF2_LocationType type,
                     std::uint64_t, OTF2_LocationGroupRef) {
  location_index[self] = static_cast<std::uint32_t>(locations.size());
  location_stats& l = locations.emplace_back();
  l.ref = self;
  l.name = name;
  l.type = location_type(type);
}
void state::region(OTF2_RegionRef self, const std::string& name, OTF2_RegionRole, OTF2_Paradigm) {
  if (region_names.size() <= self) region_names.resize(self + 1, "<region>");
  region_names[self] = name;
}
void state::metric_member(OTF2_MetricMemberRef self, const std::string& name,
                          const std::string& unit, OTF2_MetricMode) {
  members[self] = {name, unit};
}
void state::metric_class(OTF2_MetricRef self, std::uint8_t n, const OTF2_MetricMemberRef* refs) {
  classes[self].assign(refs, refs + n);
}
void state::metric_instance(OTF2_MetricRef self, OTF2_MetricRef cls) {
  auto it = classes.find(cls);
  if (it != classes.end()) classes[self] = it->second;
}
void state::parameter(OTF2_ParameterRef self, const std::string& name) {
  parameters[self] = name;
}
void state::property(const std::string& name, const std::string& v) {
  if (name == "GRAIN::COMMAND_LINE") command = v;
  if (name == "GRAIN::START_TIME") start_time = v;
}

// ---- events ---------------------------------------------------------------------------------

std::int64_t state::index_of(OTF2_LocationRef ref) const {
  auto it = location_index.find(ref);
  return it == location_index.end() ? -1 : static_cast<std::int64_t>(it->second);
}

location_stats* state::touch(OTF2_LocationRef ref, OTF2_TimeStamp t) {
  auto it = location_index.find(ref);
  if (it == location_index.end()) return nullptr;
  location_stats& l = locations[it->second];
  ++l.events;
  if (!l.seen) l.first = t;
  l.seen = true;
  l.last = t;
  return &l;
}

std::uint32_t state::stats_of_region(OTF2_RegionRef r) {
  auto it = region_index.find(r);
  if (it != region_index.end()) return it->second;
  const std::uint32_t i =
      stats_of(r < region_names.size() ? region_names[r] : std::string("<region>"));
  region_index.emplace(r, i);
  return i;
}

void state::pop(location_stats& l, std::uint64_t t) {
  closed(l, t);
  const frame f = l.stack.back();
  l.stack.pop_back();
  const std::uint64_t dur = t - f.start;
  region_stats& r = regions[f.region];
  r.total += dur;
  r.exclusive += dur - f.child;
  if (!l.stack.empty())
    l.stack.back().child += dur;
  else if (r.idle)
    l.idle += t - l.idle_since;
  else
    l.busy += t - l.busy_since;
}

void state::enter(OTF2_LocationRef loc, OTF2_TimeStamp t, const walk::attributes& a,
                  OTF2_RegionRef region) {
  location_stats* l = touch(loc, t);
  if (!l) return;
  const std::uint32_t ri = stats_of_region(region);
  region_stats& r = regions[ri];
  if (l->stack.empty()) (r.idle ? l->idle_since : l->busy_since) = t;
  l->stack.push_back({ri, t, 0});
  last_enter = entered{};
  last_enter.region = ri;
  decision* d = nullptr;
  if (r.policy) {
    d = &decisions.emplace_back();
    d->time = t;
    d->location = location_index[loc];
    d->rule = r.name.substr(7);
    pending = d;
  }
  const std::uint32_t n = a.size();
  for (std::uint32_t i = 0; i < n; ++i) {
    OTF2_AttributeRef ref;
    OTF2_Type type;
    OTF2_AttributeValue v;
    if (!a.raw(i, ref, type, v)) continue;
    if (ref == reentry_attr) last_enter.reentry = true;
    if (ref == guid_attr) last_enter.guid = as_u64(a.decode(type, v));
    if (ref == parent_attr) last_enter.parent = as_u64(a.decode(type, v));
    if (d) d->attrs.emplace_back(a.name(ref), a.decode(type, v));
  }
  if (!last_enter.reentry) {
    ++r.count;
    if (last_enter.guid) r.tasks.insert(*last_enter.guid);
    if (r.name.rfind("task:", 0) == 0) ++l->phases;
  }
}

void state::leave(OTF2_LocationRef loc, OTF2_TimeStamp t, const walk::attributes&,
                  OTF2_RegionRef region) {
  location_stats* l = touch(loc, t);
  if (!l) return;
  if (!l->stack.empty()) pop(*l, t);
  if (regions[stats_of_region(region)].policy) pending = nullptr;
}

void state::metric(OTF2_LocationRef loc, OTF2_TimeStamp t, const walk::attributes&,
                   OTF2_MetricRef metric, std::uint8_t n, const OTF2_Type* types,
                   const OTF2_MetricValue* values) {
  location_stats* l = touch(loc, t);
  if (!l || !want_metrics) return;
  auto cls = classes.find(metric);
  if (cls == classes.end()) return;
  const auto li = location_index[loc];
  for (std::size_t i = 0; i < std::min<std::size_t>(n, cls->second.size()); ++i) {
    const std::uint32_t m = cls->second[i];
    auto [it, fresh] = metric_index.try_emplace(m, static_cast<std::uint32_t>(samples.size()));
    if (fresh) {
      metric_names.push_back(members[m].first);
      samples.emplace_back();
    }
    samples[it->second].push_back({li, t, walk::metric_value(types[i], values[i])});
  }
}

void state::parameter_string(OTF2_LocationRef loc, OTF2_TimeStamp t, const walk::attributes&,
                             OTF2_ParameterRef p, const std::string& text) {
  if (!touch(loc, t) || !pending) return;
  const std::string& name = parameters[p];
  if (name == "reason" && pending->reason.empty()) pending->reason = text;
  if (name == "knob" && pending->knob.empty()) pending->knob = text;
}

void state::parameter_int(OTF2_LocationRef loc, OTF2_TimeStamp t, const walk::attributes&,
                          OTF2_ParameterRef p, std::int64_t v) {
  if (!touch(loc, t) || !pending) return;
  const std::string& name = parameters[p];
  if (name.rfind("old_value", 0) == 0 && !pending->old_v) pending->old_v = std::int64_t{v};
  if (name.rfind("new_value", 0) == 0 && !pending->new_v) pending->new_v = std::int64_t{v};
}

void state::other_event(OTF2_LocationRef loc, OTF2_TimeStamp t) {
  touch(loc, t);
}

void state::mpi_message(OTF2_LocationRef loc, OTF2_TimeStamp t, const walk::attributes&, bool sent,
                        std::uint32_t, std::uint32_t, std::uint64_t bytes) {
  location_stats* l = touch(loc, t);
  if (!l) return;
  ++(sent ? l->sent : l->received);
  (sent ? l->sent_bytes : l->received_bytes) += bytes;
}

void state::finish() {
  const std::uint64_t end = length ? offset + length : 0;
  for (auto& l : locations)
    if (l.seen)
      while (!l.stack.empty()) pop(l, std::max(l.last, end));
}

}  // namespace grain::trace_read
