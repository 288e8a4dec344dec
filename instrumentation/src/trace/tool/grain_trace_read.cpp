// grain-trace-read: the event pass of scripts/grain-trace in C++. Reads any OTF2 archive
// through the OTF2 C API (global, time-ordered event reader, as otf2-print) and prints one
// JSON document with what `grain-trace summary` and `plot` need: per location span, busy, idle
// and event count; per region Enter count, distinct GUIDs, inclusive and exclusive time; the
// decisions (policy:<rule> regions, their attributes and Parameter events); with --metrics the
// metric samples, per member and location. The python3-otf2 reader builds a Python object per
// event (~30 µs each); this pass aggregates in place, so the script takes about otf2-print's
// time. The rules are those of the script's Python reader (kept as its fallback, and the tests
// compare the two): busy while a non-idle region is open at a location's outermost level, idle
// while "Idle" is; regions still open at the end count until the trace's end.
#include <otf2/otf2.h>

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

namespace {

using value = std::variant<std::uint64_t, std::int64_t, double, std::string>;

struct frame {
  std::uint32_t region;  // index into regions
  std::uint64_t start, child;
};

struct location {
  std::uint64_t ref = 0;
  std::string name, type;
  std::uint64_t first = 0, last = 0, events = 0, busy = 0, idle = 0;
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

struct state {
  bool want_metrics = false;
  std::uint64_t resolution = 0, offset = 0, length = 0;
  std::string command, start_time;  // grain's trace properties, when present
  std::unordered_map<std::uint32_t, std::string> strings;
  std::unordered_map<std::uint32_t, std::pair<std::string, OTF2_Type>> attributes;
  std::unordered_map<std::uint32_t, std::string> parameters;
  std::unordered_map<std::uint32_t, std::pair<std::string, std::string>> members;  // name, unit
  std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> classes;           // -> members
  std::unordered_map<std::uint32_t, std::uint32_t> region_index;  // OTF2 region -> regions
  std::vector<std::string> region_names;                          // by OTF2 region ref order
  std::unordered_map<std::string, std::uint32_t> stats_index;
  std::vector<region_stats> regions;  // first Enter order
  std::vector<location> locations;    // definition order
  std::unordered_map<std::uint64_t, std::uint32_t> location_index;
  std::vector<decision> decisions;
  decision* pending = nullptr;
  std::uint32_t guid_attr = ~0u, reentry_attr = ~0u;
  std::vector<std::string> metric_names;                          // by member order of appearance
  std::unordered_map<std::uint32_t, std::uint32_t> metric_index;  // member ref -> metric_names
  std::vector<std::vector<sample>> samples;

  const std::string& str(std::uint32_t r) const {
    static const std::string empty;
    auto it = strings.find(r);
    return it == strings.end() ? empty : it->second;
  }
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
};

// ---- definitions ----------------------------------------------------------------------------

OTF2_CallbackCode def_clock(void* u, uint64_t res, uint64_t off, uint64_t len, uint64_t) {
  auto& s = *static_cast<state*>(u);
  s.resolution = res;
  s.offset = off;
  s.length = len;
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode def_string(void* u, OTF2_StringRef self, const char* v) {
  static_cast<state*>(u)->strings[self] = v ? v : "";
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode def_attribute(void* u, OTF2_AttributeRef self, OTF2_StringRef name,
                                OTF2_StringRef, OTF2_Type type) {
  auto& s = *static_cast<state*>(u);
  s.attributes[self] = {s.str(name), type};
  if (s.str(name) == "GUID") s.guid_attr = self;
  if (s.str(name) == "Resumed inline child") s.reentry_attr = self;
  return OTF2_CALLBACK_SUCCESS;
}
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
OTF2_CallbackCode def_location(void* u, OTF2_LocationRef self, OTF2_StringRef name,
                               OTF2_LocationType type, uint64_t, OTF2_LocationGroupRef) {
  auto& s = *static_cast<state*>(u);
  s.location_index[self] = static_cast<std::uint32_t>(s.locations.size());
  location& l = s.locations.emplace_back();
  l.ref = self;
  l.name = s.str(name);
  l.type = location_type(type);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode def_region(void* u, OTF2_RegionRef self, OTF2_StringRef name, OTF2_StringRef,
                             OTF2_StringRef, OTF2_RegionRole, OTF2_Paradigm, OTF2_RegionFlag,
                             OTF2_StringRef, uint32_t, uint32_t) {
  auto& s = *static_cast<state*>(u);
  if (s.region_names.size() <= self) s.region_names.resize(self + 1, "<region>");
  s.region_names[self] = s.str(name);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode def_member(void* u, OTF2_MetricMemberRef self, OTF2_StringRef name,
                             OTF2_StringRef, OTF2_MetricType, OTF2_MetricMode, OTF2_Type, OTF2_Base,
                             int64_t, OTF2_StringRef unit) {
  auto& s = *static_cast<state*>(u);
  s.members[self] = {s.str(name), s.str(unit)};
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode def_class(void* u, OTF2_MetricRef self, uint8_t n,
                            const OTF2_MetricMemberRef* members, OTF2_MetricOccurrence,
                            OTF2_RecorderKind) {
  static_cast<state*>(u)->classes[self].assign(members, members + n);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode def_instance(void* u, OTF2_MetricRef self, OTF2_MetricRef cls, OTF2_LocationRef,
                               OTF2_MetricScope, uint64_t) {
  auto& s = *static_cast<state*>(u);
  auto it = s.classes.find(cls);
  if (it != s.classes.end()) s.classes[self] = it->second;
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode def_parameter(void* u, OTF2_ParameterRef self, OTF2_StringRef name,
                                OTF2_ParameterType) {
  auto& s = *static_cast<state*>(u);
  s.parameters[self] = s.str(name);
  return OTF2_CALLBACK_SUCCESS;
}

// ---- events ---------------------------------------------------------------------------------

location* touch(state& s, OTF2_LocationRef ref, OTF2_TimeStamp t) {
  auto it = s.location_index.find(ref);
  if (it == s.location_index.end()) return nullptr;
  location& l = s.locations[it->second];
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

value attribute_value(const state& s, OTF2_Type type, const OTF2_AttributeValue& v) {
  switch (type) {
    case OTF2_TYPE_UINT8:
      return std::uint64_t{v.uint8};
    case OTF2_TYPE_UINT16:
      return std::uint64_t{v.uint16};
    case OTF2_TYPE_UINT32:
      return std::uint64_t{v.uint32};
    case OTF2_TYPE_INT8:
      return std::int64_t{v.int8};
    case OTF2_TYPE_INT16:
      return std::int64_t{v.int16};
    case OTF2_TYPE_INT32:
      return std::int64_t{v.int32};
    case OTF2_TYPE_INT64:
      return std::int64_t{v.int64};
    case OTF2_TYPE_FLOAT:
      return double{v.float32};
    case OTF2_TYPE_DOUBLE:
      return v.float64;
    case OTF2_TYPE_STRING:
      return s.str(v.stringRef);
    default:
      return std::uint64_t{v.uint64};
  }
}

void pop(state& s, location& l, std::uint64_t t) {
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

OTF2_CallbackCode evt_enter(OTF2_LocationRef loc, OTF2_TimeStamp t, void* u, OTF2_AttributeList* a,
                            OTF2_RegionRef region) {
  auto& s = *static_cast<state*>(u);
  location* l = touch(s, loc, t);
  if (!l) return OTF2_CALLBACK_SUCCESS;
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
  const uint32_t n = a ? OTF2_AttributeList_GetNumberOfElements(a) : 0;
  for (uint32_t i = 0; i < n; ++i) {
    OTF2_AttributeRef ref;
    OTF2_Type type;
    OTF2_AttributeValue v;
    if (OTF2_AttributeList_GetAttributeByIndex(a, i, &ref, &type, &v) != OTF2_SUCCESS) continue;
    if (ref == s.reentry_attr) reentry = true;
    if (ref == s.guid_attr) {
      const value g = attribute_value(s, type, v);
      if (auto* x = std::get_if<std::uint64_t>(&g)) guid = *x;
      if (auto* x = std::get_if<std::int64_t>(&g)) guid = static_cast<std::uint64_t>(*x);
    }
    if (d) {
      auto it = s.attributes.find(ref);
      d->attrs.emplace_back(
          it != s.attributes.end() ? it->second.first : "attribute " + std::to_string(ref),
          attribute_value(s, type, v));
    }
  }
  if (!reentry) {
    ++r.count;
    if (guid) r.tasks.insert(*guid);
  }
  return OTF2_CALLBACK_SUCCESS;
}

OTF2_CallbackCode evt_leave(OTF2_LocationRef loc, OTF2_TimeStamp t, void* u, OTF2_AttributeList*,
                            OTF2_RegionRef region) {
  auto& s = *static_cast<state*>(u);
  location* l = touch(s, loc, t);
  if (!l) return OTF2_CALLBACK_SUCCESS;
  if (!l->stack.empty()) pop(s, *l, t);
  if (s.regions[stats_of_region(s, region)].policy) s.pending = nullptr;
  return OTF2_CALLBACK_SUCCESS;
}

OTF2_CallbackCode evt_metric(OTF2_LocationRef loc, OTF2_TimeStamp t, void* u, OTF2_AttributeList*,
                             OTF2_MetricRef metric, uint8_t n, const OTF2_Type* types,
                             const OTF2_MetricValue* values) {
  auto& s = *static_cast<state*>(u);
  location* l = touch(s, loc, t);
  if (!l || !s.want_metrics) return OTF2_CALLBACK_SUCCESS;
  auto cls = s.classes.find(metric);
  if (cls == s.classes.end()) return OTF2_CALLBACK_SUCCESS;
  const auto li = s.location_index[loc];
  for (std::size_t i = 0; i < std::min<std::size_t>(n, cls->second.size()); ++i) {
    const std::uint32_t m = cls->second[i];
    auto [it, fresh] = s.metric_index.try_emplace(m, static_cast<std::uint32_t>(s.samples.size()));
    if (fresh) {
      s.metric_names.push_back(s.members[m].first);
      s.samples.emplace_back();
    }
    double v = types[i] == OTF2_TYPE_DOUBLE  ? values[i].floating_point
               : types[i] == OTF2_TYPE_INT64 ? static_cast<double>(values[i].signed_int)
                                             : static_cast<double>(values[i].unsigned_int);
    s.samples[it->second].push_back({li, t, v});
  }
  return OTF2_CALLBACK_SUCCESS;
}

OTF2_CallbackCode evt_pstring(OTF2_LocationRef loc, OTF2_TimeStamp t, void* u, OTF2_AttributeList*,
                              OTF2_ParameterRef p, OTF2_StringRef str) {
  auto& s = *static_cast<state*>(u);
  if (!touch(s, loc, t) || !s.pending) return OTF2_CALLBACK_SUCCESS;
  const std::string& name = s.parameters[p];
  if (name == "reason" && s.pending->reason.empty()) s.pending->reason = s.str(str);
  if (name == "knob" && s.pending->knob.empty()) s.pending->knob = s.str(str);
  return OTF2_CALLBACK_SUCCESS;
}

OTF2_CallbackCode evt_pint(OTF2_LocationRef loc, OTF2_TimeStamp t, void* u, OTF2_AttributeList*,
                           OTF2_ParameterRef p, int64_t v) {
  auto& s = *static_cast<state*>(u);
  if (!touch(s, loc, t) || !s.pending) return OTF2_CALLBACK_SUCCESS;
  const std::string& name = s.parameters[p];
  if (name.rfind("old_value", 0) == 0 && !s.pending->old_v) s.pending->old_v = std::int64_t{v};
  if (name.rfind("new_value", 0) == 0 && !s.pending->new_v) s.pending->new_v = std::int64_t{v};
  return OTF2_CALLBACK_SUCCESS;
}

OTF2_CallbackCode evt_puint(OTF2_LocationRef loc, OTF2_TimeStamp t, void* u, OTF2_AttributeList*,
                            OTF2_ParameterRef, uint64_t) {
  touch(*static_cast<state*>(u), loc, t);
  return OTF2_CALLBACK_SUCCESS;
}

OTF2_CallbackCode evt_flush(OTF2_LocationRef loc, OTF2_TimeStamp t, void* u, OTF2_AttributeList*,
                            OTF2_TimeStamp) {
  touch(*static_cast<state*>(u), loc, t);
  return OTF2_CALLBACK_SUCCESS;
}

OTF2_CallbackCode evt_onoff(OTF2_LocationRef loc, OTF2_TimeStamp t, void* u, OTF2_AttributeList*,
                            OTF2_MeasurementMode) {
  touch(*static_cast<state*>(u), loc, t);
  return OTF2_CALLBACK_SUCCESS;
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
    std::fprintf(f, ",\"busy\":%" PRIu64 ",\"idle\":%" PRIu64 "}", l.busy, l.idle);
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

struct reader_closer {
  void operator()(OTF2_Reader* r) const { OTF2_Reader_Close(r); }
};

int fail(const std::string& what) {
  std::fprintf(stderr, "grain-trace-read: %s\n", what.c_str());
  return 1;
}

int read(const char* anchor, state& s) {
  std::unique_ptr<OTF2_Reader, reader_closer> r(OTF2_Reader_Open(anchor));
  if (!r) return fail(std::string("cannot open the OTF2 archive ") + anchor);
  OTF2_Reader_SetSerialCollectiveCallbacks(r.get());
  OTF2_GlobalDefReader* gdr = OTF2_Reader_GetGlobalDefReader(r.get());
  if (!gdr) return fail(std::string("cannot read the definitions of ") + anchor);
  OTF2_GlobalDefReaderCallbacks* dc = OTF2_GlobalDefReaderCallbacks_New();
  OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(dc, def_clock);
  OTF2_GlobalDefReaderCallbacks_SetStringCallback(dc, def_string);
  OTF2_GlobalDefReaderCallbacks_SetAttributeCallback(dc, def_attribute);
  OTF2_GlobalDefReaderCallbacks_SetLocationCallback(dc, def_location);
  OTF2_GlobalDefReaderCallbacks_SetRegionCallback(dc, def_region);
  OTF2_GlobalDefReaderCallbacks_SetMetricMemberCallback(dc, def_member);
  OTF2_GlobalDefReaderCallbacks_SetMetricClassCallback(dc, def_class);
  OTF2_GlobalDefReaderCallbacks_SetMetricInstanceCallback(dc, def_instance);
  OTF2_GlobalDefReaderCallbacks_SetParameterCallback(dc, def_parameter);
  OTF2_Reader_RegisterGlobalDefCallbacks(r.get(), gdr, dc, &s);
  OTF2_GlobalDefReaderCallbacks_Delete(dc);
  uint64_t ndefs = 0;
  if (OTF2_Reader_ReadAllGlobalDefinitions(r.get(), gdr, &ndefs) != OTF2_SUCCESS)
    return fail(std::string("cannot read the definitions of ") + anchor);
  OTF2_Reader_CloseGlobalDefReader(r.get(), gdr);
  auto property = [&](const char* name, std::string& out) {
    char* v = nullptr;
    if (OTF2_Reader_GetProperty(r.get(), name, &v) == OTF2_SUCCESS && v) out = v;
    std::free(v);
  };
  property("GRAIN::COMMAND_LINE", s.command);
  property("GRAIN::START_TIME", s.start_time);

  for (auto& l : s.locations) OTF2_Reader_SelectLocation(r.get(), l.ref);
  const bool defs = OTF2_Reader_OpenDefFiles(r.get()) == OTF2_SUCCESS;
  OTF2_Reader_OpenEvtFiles(r.get());
  for (auto& l : s.locations) {
    if (defs) {
      if (OTF2_DefReader* dr = OTF2_Reader_GetDefReader(r.get(), l.ref)) {
        uint64_t n = 0;
        OTF2_Reader_ReadAllLocalDefinitions(r.get(), dr, &n);
        OTF2_Reader_CloseDefReader(r.get(), dr);
      }
    }
    OTF2_Reader_GetEvtReader(r.get(), l.ref);
  }
  if (defs) OTF2_Reader_CloseDefFiles(r.get());

  OTF2_GlobalEvtReader* ger = OTF2_Reader_GetGlobalEvtReader(r.get());
  if (!ger) return fail(std::string("cannot read the events of ") + anchor);
  OTF2_GlobalEvtReaderCallbacks* ec = OTF2_GlobalEvtReaderCallbacks_New();
  OTF2_GlobalEvtReaderCallbacks_SetEnterCallback(ec, evt_enter);
  OTF2_GlobalEvtReaderCallbacks_SetLeaveCallback(ec, evt_leave);
  OTF2_GlobalEvtReaderCallbacks_SetMetricCallback(ec, evt_metric);
  OTF2_GlobalEvtReaderCallbacks_SetParameterStringCallback(ec, evt_pstring);
  OTF2_GlobalEvtReaderCallbacks_SetParameterIntCallback(ec, evt_pint);
  OTF2_GlobalEvtReaderCallbacks_SetParameterUnsignedIntCallback(ec, evt_puint);
  OTF2_GlobalEvtReaderCallbacks_SetBufferFlushCallback(ec, evt_flush);
  OTF2_GlobalEvtReaderCallbacks_SetMeasurementOnOffCallback(ec, evt_onoff);
  OTF2_Reader_RegisterGlobalEvtCallbacks(r.get(), ger, ec, &s);
  OTF2_GlobalEvtReaderCallbacks_Delete(ec);
  uint64_t nevents = 0;
  const OTF2_ErrorCode rc = OTF2_Reader_ReadAllGlobalEvents(r.get(), ger, &nevents);
  OTF2_Reader_CloseGlobalEvtReader(r.get(), ger);
  OTF2_Reader_CloseEvtFiles(r.get());
  if (rc != OTF2_SUCCESS)
    return fail(std::string("cannot read the events of ") + anchor + ": " +
                OTF2_Error_GetDescription(rc));
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
