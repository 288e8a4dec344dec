// grain-trace-read: the event pass of scripts/grain-trace in C++. Reads any OTF2 archive
// through grain's OTF2 pass (src/trace/otf2_walk.hpp: the OTF2 C API's global, time-ordered event
// reader, as otf2-print; read_otf2 is its other consumer) and prints one
// JSON document with what `grain-trace summary` and `plot` need: per location span, busy, idle
// and event count; per region Enter count, distinct GUIDs, inclusive and exclusive time; the
// decisions (policy:<rule> regions, their attributes and Parameter events); with --metrics the
// metric samples, per member and location. The python3-otf2 reader builds a Python object per
// event (~30 µs each); this pass aggregates in place, so the script takes about otf2-print's
// time. The rules are those of the script's Python reader (kept as its fallback, and the tests
// compare the two): busy while a non-idle region is open at a location's outermost level, idle
// while "Idle" is; regions still open at the end count until the trace's end.
#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include "../src/trace/otf2_walk.hpp"

namespace {

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
  std::vector<std::pair<std::string, value>> attrs;
  std::string rule, reason, knob;
  std::optional<value> old_v, new_v;
};

struct sample {
  std::uint32_t loc;
  std::uint64_t t;
  double v;
};

struct state final : walk::consumer {
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
  std::uint32_t guid_attr = ~0u, reentry_attr = ~0u;
  std::vector<std::string> metric_names;                          // by member order of appearance
  std::unordered_map<std::uint32_t, std::uint32_t> metric_index;  // member ref -> metric_names
  std::vector<std::vector<sample>> samples;

  std::uint32_t stats_of(const std::string& name) {
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

  // walk::consumer
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
};

// ---- definitions ----------------------------------------------------------------------------

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

void state::clock(std::uint64_t res, std::uint64_t off, std::uint64_t len, std::uint64_t) {
  resolution = res;
  offset = off;
  length = len;
}
void state::attribute(OTF2_AttributeRef self, const std::string& name, OTF2_Type) {
  if (name == "GUID") guid_attr = self;
  if (name == "Resumed inline child") reentry_attr = self;
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

location_stats* touch(state& s, OTF2_LocationRef ref, OTF2_TimeStamp t) {
  auto it = s.location_index.find(ref);
  if (it == s.location_index.end()) return nullptr;
  location_stats& l = s.locations[it->second];
  ++l.events;
  if (!l.seen) l.first = t;
  l.seen = true;
  l.last = t;
  return &l;
}

std::uint32_t stats_of_region(state& s, OTF2_RegionRef r) {
  auto it = s.region_index.find(r);
  if (it != s.region_index.end()) return it->second;
  const std::uint32_t i =
      s.stats_of(r < s.region_names.size() ? s.region_names[r] : std::string("<region>"));
  s.region_index.emplace(r, i);
  return i;
}

void pop(state& s, location_stats& l, std::uint64_t t) {
  const frame f = l.stack.back();
  l.stack.pop_back();
  const std::uint64_t dur = t - f.start;
  region_stats& r = s.regions[f.region];
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
  state& s = *this;
  location_stats* l = touch(s, loc, t);
  if (!l) return;
  const std::uint32_t ri = stats_of_region(s, region);
  region_stats& r = s.regions[ri];
  if (l->stack.empty()) (r.idle ? l->idle_since : l->busy_since) = t;
  l->stack.push_back({ri, t, 0});
  bool reentry = false;
  std::optional<std::uint64_t> guid;
  decision* d = nullptr;
  if (r.policy) {
    d = &s.decisions.emplace_back();
    d->time = t;
    d->rule = r.name.substr(7);
    s.pending = d;
  }
  const std::uint32_t n = a.size();
  for (std::uint32_t i = 0; i < n; ++i) {
    OTF2_AttributeRef ref;
    OTF2_Type type;
    OTF2_AttributeValue v;
    if (!a.raw(i, ref, type, v)) continue;
    if (ref == s.reentry_attr) reentry = true;
    if (ref == s.guid_attr) {
      const value g = a.decode(type, v);
      if (auto* x = std::get_if<std::uint64_t>(&g)) guid = *x;
      if (auto* x = std::get_if<std::int64_t>(&g)) guid = static_cast<std::uint64_t>(*x);
    }
    if (d) d->attrs.emplace_back(a.name(ref), a.decode(type, v));
  }
  if (!reentry) {
    ++r.count;
    if (guid) r.tasks.insert(*guid);
    if (r.name.rfind("task:", 0) == 0) ++l->phases;
  }
}

void state::leave(OTF2_LocationRef loc, OTF2_TimeStamp t, const walk::attributes&,
                  OTF2_RegionRef region) {
  location_stats* l = touch(*this, loc, t);
  if (!l) return;
  if (!l->stack.empty()) pop(*this, *l, t);
  if (regions[stats_of_region(*this, region)].policy) pending = nullptr;
}

void state::metric(OTF2_LocationRef loc, OTF2_TimeStamp t, const walk::attributes&,
                   OTF2_MetricRef metric, std::uint8_t n, const OTF2_Type* types,
                   const OTF2_MetricValue* values) {
  location_stats* l = touch(*this, loc, t);
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
  if (!touch(*this, loc, t) || !pending) return;
  const std::string& name = parameters[p];
  if (name == "reason" && pending->reason.empty()) pending->reason = text;
  if (name == "knob" && pending->knob.empty()) pending->knob = text;
}

void state::parameter_int(OTF2_LocationRef loc, OTF2_TimeStamp t, const walk::attributes&,
                          OTF2_ParameterRef p, std::int64_t v) {
  if (!touch(*this, loc, t) || !pending) return;
  const std::string& name = parameters[p];
  if (name.rfind("old_value", 0) == 0 && !pending->old_v) pending->old_v = std::int64_t{v};
  if (name.rfind("new_value", 0) == 0 && !pending->new_v) pending->new_v = std::int64_t{v};
}

void state::other_event(OTF2_LocationRef loc, OTF2_TimeStamp t) {
  touch(*this, loc, t);
}

void state::mpi_message(OTF2_LocationRef loc, OTF2_TimeStamp t, const walk::attributes&, bool sent,
                        std::uint32_t, std::uint32_t, std::uint64_t bytes) {
  location_stats* l = touch(*this, loc, t);
  if (!l) return;
  ++(sent ? l->sent : l->received);
  (sent ? l->sent_bytes : l->received_bytes) += bytes;
}

// ---- output ---------------------------------------------------------------------------------

void put_string(std::FILE* f, const std::string& v) {
  std::fputc('"', f);
  for (const unsigned char c : v) {
    if (c == '"' || c == '\\')
      std::fprintf(f, "\\%c", c);
    else if (c < 0x20)
      std::fprintf(f, "\\u%04x", c);
    else
      std::fputc(c, f);
  }
  std::fputc('"', f);
}

void put_double(std::FILE* f, double v) {
  // Python's json reads NaN and Infinity; an integral double keeps a ".0" so that it stays a
  // float there (the script formats ints and floats differently).
  if (std::isnan(v)) {
    std::fputs("NaN", f);
  } else if (std::isinf(v)) {
    std::fputs(v > 0 ? "Infinity" : "-Infinity", f);
  } else {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    std::fputs(buf, f);
    if (!std::strpbrk(buf, ".eE")) std::fputs(".0", f);
  }
}

void put_value(std::FILE* f, const value& v) {
  if (auto* x = std::get_if<std::uint64_t>(&v))
    std::fprintf(f, "%" PRIu64, *x);
  else if (auto* y = std::get_if<std::int64_t>(&v))
    std::fprintf(f, "%" PRId64, *y);
  else if (auto* d = std::get_if<double>(&v))
    put_double(f, *d);
  else
    put_string(f, std::get<std::string>(v));
}

void print(const state& s, std::FILE* f) {
  std::fprintf(
      f, "{\"resolution\":%" PRIu64 ",\"offset\":%" PRIu64 ",\"length\":%" PRIu64 ",\"command\":",
      s.resolution, s.offset, s.length);
  put_string(f, s.command);
  std::fputs(",\"start_time\":", f);
  put_string(f, s.start_time);
  std::fputs(",\n\"locations\":[", f);
  const char* sep = "";
  for (auto& l : s.locations) {
    std::fprintf(f, "%s\n{\"ref\":%" PRIu64 ",\"name\":", sep, l.ref);
    put_string(f, l.name);
    std::fprintf(f, ",\"type\":\"%s\",\"events\":%" PRIu64, l.type.c_str(), l.events);
    if (l.seen)
      std::fprintf(f, ",\"first\":%" PRIu64 ",\"last\":%" PRIu64, l.first, l.last);
    else
      std::fputs(",\"first\":null,\"last\":null", f);
    std::fprintf(f,
                 ",\"busy\":%" PRIu64 ",\"idle\":%" PRIu64 ",\"phases\":%" PRIu64
                 ",\"sent\":%" PRIu64 ",\"received\":%" PRIu64 ",\"sent_bytes\":%" PRIu64
                 ",\"received_bytes\":%" PRIu64 "}",
                 l.busy, l.idle, l.phases, l.sent, l.received, l.sent_bytes, l.received_bytes);
    sep = ",";
  }
  std::fputs("],\n\"regions\":[", f);
  sep = "";
  for (auto& r : s.regions) {
    std::fprintf(f, "%s\n{\"name\":", sep);
    put_string(f, r.name);
    std::fprintf(
        f, ",\"count\":%" PRIu64 ",\"tasks\":%zu,\"total\":%" PRIu64 ",\"exclusive\":%" PRIu64 "}",
        r.count, r.tasks.size(), r.total, r.exclusive);
    sep = ",";
  }
  std::fputs("],\n\"decisions\":[", f);
  sep = "";
  for (auto& d : s.decisions) {
    std::fprintf(f, "%s\n{\"time\":%" PRIu64 ",\"rule\":", sep, d.time);
    put_string(f, d.rule);
    std::fputs(",\"attributes\":{", f);
    const char* asep = "";
    for (auto& [n, v] : d.attrs) {
      std::fputs(asep, f);
      put_string(f, n);
      std::fputc(':', f);
      put_value(f, v);
      asep = ",";
    }
    std::fputs("},\"parameters\":{", f);
    asep = "";
    auto param = [&](const char* n, const std::optional<value>& v) {
      if (!v) return;
      std::fprintf(f, "%s\"%s\":", asep, n);
      put_value(f, *v);
      asep = ",";
    };
    param("reason", d.reason.empty() ? std::nullopt : std::optional<value>(d.reason));
    param("knob", d.knob.empty() ? std::nullopt : std::optional<value>(d.knob));
    param("old_value", d.old_v);
    param("new_value", d.new_v);
    std::fputs("}}", f);
    sep = ",";
  }
  std::fputs("],\n\"units\":{", f);
  sep = "";
  for (auto& [ref, m] : s.members) {
    std::fputs(sep, f);
    put_string(f, m.first);
    std::fputc(':', f);
    put_string(f, m.second);
    sep = ",";
  }
  std::fputs("},\n\"metrics\":{", f);
  sep = "";
  for (std::size_t i = 0; i < s.samples.size(); ++i) {
    std::fputs(sep, f);
    put_string(f, s.metric_names[i]);
    std::fputs(":[", f);
    const char* ssep = "";
    for (auto& x : s.samples[i]) {
      std::fprintf(f, "%s[%u,%" PRIu64 ",", ssep, x.loc, x.t);
      put_double(f, x.v);
      std::fputc(']', f);
      ssep = ",";
    }
    std::fputs("]\n", f);
    sep = ",";
  }
  std::fputs("}}\n", f);
}

int fail(const std::string& what) {
  std::fprintf(stderr, "grain-trace-read: %s\n", what.c_str());
  return 1;
}

int read(const char* anchor, state& s) {
  try {
    walk::walker().walk(anchor, s);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  // Regions still open at the end count until the trace's end.
  const std::uint64_t end = s.length ? s.offset + s.length : 0;
  for (auto& l : s.locations)
    if (l.seen)
      while (!l.stack.empty()) pop(s, l, std::max(l.last, end));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  state s;
  const char* anchor = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--metrics") == 0)
      s.want_metrics = true;
    else if (!anchor && argv[i][0] != '-')
      anchor = argv[i];
    else
      return fail(std::string("unknown argument ") + argv[i] +
                  " (usage: grain-trace-read [--metrics] ARCHIVE.otf2)");
  }
  if (!anchor) return fail("usage: grain-trace-read [--metrics] ARCHIVE.otf2");
  if (const int rc = read(anchor, s)) return rc;
  print(s, stdout);
  return std::fflush(stdout) == 0 && !std::ferror(stdout) ? 0 : fail("cannot write the output");
}
