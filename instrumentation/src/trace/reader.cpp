// read_otf2: an OTF2 archive in memory (tests and small tools).
#include <otf2/otf2.h>

#include <memory>
#include <stdexcept>

#include "grain/instrumentation/trace_reader.hpp"

namespace grain::instrumentation {
namespace {

struct state {
  otf2_trace t;
  std::map<std::uint32_t, std::string> strings;
  std::map<std::uint32_t, std::pair<std::string, OTF2_Type>> attributes;
  std::map<std::uint32_t, std::string> parameters;
  std::map<std::uint32_t, otf2_metric> members;
  std::map<std::uint32_t, std::uint32_t> class_first_member;

  std::string str(OTF2_StringRef r) const {
    auto it = strings.find(r);
    return it == strings.end() ? std::string() : it->second;
  }
};

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

OTF2_CallbackCode def_clock(void* u, uint64_t res, uint64_t off, uint64_t len, uint64_t rt) {
  auto& s = *static_cast<state*>(u);
  s.t.resolution = res;
  s.t.global_offset = off;
  s.t.trace_length = len;
  s.t.realtime = rt;
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
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode def_location(void* u, OTF2_LocationRef self, OTF2_StringRef name,
                               OTF2_LocationType type, uint64_t n, OTF2_LocationGroupRef group) {
  auto& s = *static_cast<state*>(u);
  auto& l = s.t.locations[self];
  l.id = self;
  l.name = s.str(name);
  l.type = type == OTF2_LOCATION_TYPE_CPU_THREAD           ? "CPU_THREAD"
           : type == OTF2_LOCATION_TYPE_METRIC             ? "METRIC"
           : type == OTF2_LOCATION_TYPE_ACCELERATOR_STREAM ? "ACCELERATOR_STREAM"
                                                           : "UNKNOWN";
  l.group = group;
  l.declared_events = n;
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode def_region(void* u, OTF2_RegionRef self, OTF2_StringRef name, OTF2_StringRef,
                             OTF2_StringRef, OTF2_RegionRole role, OTF2_Paradigm paradigm,
                             OTF2_RegionFlag, OTF2_StringRef, uint32_t, uint32_t) {
  auto& s = *static_cast<state*>(u);
  s.t.regions[self] = {s.str(name), role_name(role),
                       paradigm == OTF2_PARADIGM_USER ? "USER" : std::to_string(paradigm)};
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode def_member(void* u, OTF2_MetricMemberRef self, OTF2_StringRef name,
                             OTF2_StringRef, OTF2_MetricType, OTF2_MetricMode mode, OTF2_Type,
                             OTF2_Base, int64_t, OTF2_StringRef unit) {
  auto& s = *static_cast<state*>(u);
  s.members[self] = {s.str(name), s.str(unit), mode_name(mode)};
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode def_class(void* u, OTF2_MetricRef self, uint8_t n,
                            const OTF2_MetricMemberRef* members, OTF2_MetricOccurrence,
                            OTF2_RecorderKind) {
  auto& s = *static_cast<state*>(u);
  if (n > 0) {
    s.class_first_member[self] = members[0];
    auto it = s.members.find(members[0]);
    if (it != s.members.end()) s.t.metrics[self] = it->second;
  }
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode def_parameter(void* u, OTF2_ParameterRef self, OTF2_StringRef name,
                                OTF2_ParameterType) {
  auto& s = *static_cast<state*>(u);
  s.parameters[self] = s.str(name);
  return OTF2_CALLBACK_SUCCESS;
}

otf2_event& add(state& s, OTF2_LocationRef loc, OTF2_TimeStamp time, OTF2_AttributeList* a,
                otf2_event::kind k) {
  auto& l = s.t.locations[loc];
  l.id = loc;
  auto& e = l.events.emplace_back();
  e.type = k;
  e.time = time;
  if (a) {
    const uint32_t n = OTF2_AttributeList_GetNumberOfElements(a);
    for (uint32_t i = 0; i < n; ++i) {
      OTF2_AttributeRef ref;
      OTF2_Type type;
      OTF2_AttributeValue v;
      if (OTF2_AttributeList_GetAttributeByIndex(a, i, &ref, &type, &v) != OTF2_SUCCESS) continue;
      otf2_attribute at;
      auto it = s.attributes.find(ref);
      at.name = it != s.attributes.end() ? it->second.first : "attribute " + std::to_string(ref);
      switch (type) {
        case OTF2_TYPE_UINT8:
          at.value = std::uint64_t{v.uint8};
          break;
        case OTF2_TYPE_UINT16:
          at.value = std::uint64_t{v.uint16};
          break;
        case OTF2_TYPE_UINT32:
          at.value = std::uint64_t{v.uint32};
          break;
        case OTF2_TYPE_UINT64:
          at.value = std::uint64_t{v.uint64};
          break;
        case OTF2_TYPE_INT8:
          at.value = std::int64_t{v.int8};
          break;
        case OTF2_TYPE_INT16:
          at.value = std::int64_t{v.int16};
          break;
        case OTF2_TYPE_INT32:
          at.value = std::int64_t{v.int32};
          break;
        case OTF2_TYPE_INT64:
          at.value = std::int64_t{v.int64};
          break;
        case OTF2_TYPE_FLOAT:
          at.value = double{v.float32};
          break;
        case OTF2_TYPE_DOUBLE:
          at.value = v.float64;
          break;
        case OTF2_TYPE_STRING:
          at.value = s.str(v.stringRef);
          break;
        default:
          at.value = std::uint64_t{v.uint64};
      }
      e.attributes.push_back(std::move(at));
    }
  }
  return e;
}

OTF2_CallbackCode evt_enter(OTF2_LocationRef loc, OTF2_TimeStamp time, void* u,
                            OTF2_AttributeList* a, OTF2_RegionRef region) {
  auto& s = *static_cast<state*>(u);
  auto& e = add(s, loc, time, a, otf2_event::kind::enter);
  e.ref = region;
  e.name = s.t.regions[region].name;
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode evt_leave(OTF2_LocationRef loc, OTF2_TimeStamp time, void* u,
                            OTF2_AttributeList* a, OTF2_RegionRef region) {
  auto& s = *static_cast<state*>(u);
  auto& e = add(s, loc, time, a, otf2_event::kind::leave);
  e.ref = region;
  e.name = s.t.regions[region].name;
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode evt_metric(OTF2_LocationRef loc, OTF2_TimeStamp time, void* u,
                             OTF2_AttributeList* a, OTF2_MetricRef metric, uint8_t n,
                             const OTF2_Type* types, const OTF2_MetricValue* values) {
  auto& s = *static_cast<state*>(u);
  auto& e = add(s, loc, time, a, otf2_event::kind::metric);
  e.ref = metric;
  auto it = s.t.metrics.find(metric);
  e.name = it != s.t.metrics.end() ? it->second.name : "metric " + std::to_string(metric);
  if (n > 0) {
    switch (types[0]) {
      case OTF2_TYPE_DOUBLE:
        e.value = values[0].floating_point;
        break;
      case OTF2_TYPE_INT64:
        e.value = static_cast<double>(values[0].signed_int);
        break;
      default:
        e.value = static_cast<double>(values[0].unsigned_int);
    }
  }
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode evt_pstring(OTF2_LocationRef loc, OTF2_TimeStamp time, void* u,
                              OTF2_AttributeList* a, OTF2_ParameterRef p, OTF2_StringRef str) {
  auto& s = *static_cast<state*>(u);
  auto& e = add(s, loc, time, a, otf2_event::kind::parameter_string);
  e.ref = p;
  e.name = s.parameters[p];
  e.text = s.str(str);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode evt_pint(OTF2_LocationRef loc, OTF2_TimeStamp time, void* u,
                           OTF2_AttributeList* a, OTF2_ParameterRef p, int64_t v) {
  auto& s = *static_cast<state*>(u);
  auto& e = add(s, loc, time, a, otf2_event::kind::parameter_int);
  e.ref = p;
  e.name = s.parameters[p];
  e.value = static_cast<double>(v);
  return OTF2_CALLBACK_SUCCESS;
}

struct reader_closer {
  void operator()(OTF2_Reader* r) const { OTF2_Reader_Close(r); }
};

}  // namespace

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
  std::unique_ptr<OTF2_Reader, reader_closer> r(OTF2_Reader_Open(anchor.c_str()));
  if (!r) throw std::runtime_error("cannot open the OTF2 archive " + anchor);
  OTF2_Reader_SetSerialCollectiveCallbacks(r.get());
  state s;

  OTF2_GlobalDefReader* gdr = OTF2_Reader_GetGlobalDefReader(r.get());
  if (!gdr) throw std::runtime_error("cannot read the definitions of " + anchor);
  OTF2_GlobalDefReaderCallbacks* dc = OTF2_GlobalDefReaderCallbacks_New();
  OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(dc, def_clock);
  OTF2_GlobalDefReaderCallbacks_SetStringCallback(dc, def_string);
  OTF2_GlobalDefReaderCallbacks_SetAttributeCallback(dc, def_attribute);
  OTF2_GlobalDefReaderCallbacks_SetLocationCallback(dc, def_location);
  OTF2_GlobalDefReaderCallbacks_SetRegionCallback(dc, def_region);
  OTF2_GlobalDefReaderCallbacks_SetMetricMemberCallback(dc, def_member);
  OTF2_GlobalDefReaderCallbacks_SetMetricClassCallback(dc, def_class);
  OTF2_GlobalDefReaderCallbacks_SetParameterCallback(dc, def_parameter);
  OTF2_Reader_RegisterGlobalDefCallbacks(r.get(), gdr, dc, &s);
  OTF2_GlobalDefReaderCallbacks_Delete(dc);
  uint64_t ndefs = 0;
  if (OTF2_Reader_ReadAllGlobalDefinitions(r.get(), gdr, &ndefs) != OTF2_SUCCESS)
    throw std::runtime_error("cannot read the definitions of " + anchor);
  OTF2_Reader_CloseGlobalDefReader(r.get(), gdr);

  for (auto& [id, l] : s.t.locations) OTF2_Reader_SelectLocation(r.get(), id);
  const bool defs = OTF2_Reader_OpenDefFiles(r.get()) == OTF2_SUCCESS;
  OTF2_Reader_OpenEvtFiles(r.get());
  for (auto& [id, l] : s.t.locations) {
    if (defs) {
      OTF2_DefReader* dr = OTF2_Reader_GetDefReader(r.get(), id);
      if (dr) {
        uint64_t n = 0;
        OTF2_Reader_ReadAllLocalDefinitions(r.get(), dr, &n);
        OTF2_Reader_CloseDefReader(r.get(), dr);
      }
    }
    OTF2_Reader_GetEvtReader(r.get(), id);
  }
  if (defs) OTF2_Reader_CloseDefFiles(r.get());

  OTF2_GlobalEvtReader* ger = OTF2_Reader_GetGlobalEvtReader(r.get());
  if (!ger) throw std::runtime_error("cannot read the events of " + anchor);
  OTF2_GlobalEvtReaderCallbacks* ec = OTF2_GlobalEvtReaderCallbacks_New();
  OTF2_GlobalEvtReaderCallbacks_SetEnterCallback(ec, evt_enter);
  OTF2_GlobalEvtReaderCallbacks_SetLeaveCallback(ec, evt_leave);
  OTF2_GlobalEvtReaderCallbacks_SetMetricCallback(ec, evt_metric);
  OTF2_GlobalEvtReaderCallbacks_SetParameterStringCallback(ec, evt_pstring);
  OTF2_GlobalEvtReaderCallbacks_SetParameterIntCallback(ec, evt_pint);
  OTF2_Reader_RegisterGlobalEvtCallbacks(r.get(), ger, ec, &s);
  OTF2_GlobalEvtReaderCallbacks_Delete(ec);
  uint64_t nevents = 0;
  const OTF2_ErrorCode rc = OTF2_Reader_ReadAllGlobalEvents(r.get(), ger, &nevents);
  OTF2_Reader_CloseGlobalEvtReader(r.get(), ger);
  OTF2_Reader_CloseEvtFiles(r.get());
  if (rc != OTF2_SUCCESS)
    throw std::runtime_error("cannot read the events of " + anchor + ": " +
                             OTF2_Error_GetDescription(rc));
  return std::move(s.t);
}

}  // namespace grain::instrumentation
