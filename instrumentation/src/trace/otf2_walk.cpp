// The OTF2 pass shared by read_otf2 and grain-trace-read (see otf2_walk.hpp): OTF2's C callbacks
// forward to the consumer, with strings and attribute names resolved.
#if GRAIN_WITH_OTF2  // CMake GRAIN_WITH_OTF2; without it nothing here is built
#include "otf2_walk.hpp"

#include <cstdlib>
#include <memory>
#include <stdexcept>

namespace grain::instrumentation::otf2_walk {
namespace {

walker& W(void* u) {
  return *static_cast<walker*>(u);
}

OTF2_CallbackCode def_clock(void* u, uint64_t res, uint64_t off, uint64_t len, uint64_t rt) {
  W(u).c->clock(res, off, len, rt);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode def_string(void* u, OTF2_StringRef self, const char* v) {
  W(u).strings[self] = v ? v : "";
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode def_attribute(void* u, OTF2_AttributeRef self, OTF2_StringRef name,
                                OTF2_StringRef, OTF2_Type type) {
  walker& w = W(u);
  w.attribute_defs[self] = {w.str(name), type};
  w.c->attribute(self, w.str(name), type);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode def_location(void* u, OTF2_LocationRef self, OTF2_StringRef name,
                               OTF2_LocationType type, uint64_t n, OTF2_LocationGroupRef group) {
  walker& w = W(u);
  w.locations.push_back(self);
  w.c->location(self, w.str(name), type, n, group);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode def_region(void* u, OTF2_RegionRef self, OTF2_StringRef name, OTF2_StringRef,
                             OTF2_StringRef, OTF2_RegionRole role, OTF2_Paradigm paradigm,
                             OTF2_RegionFlag, OTF2_StringRef, uint32_t, uint32_t) {
  W(u).c->region(self, W(u).str(name), role, paradigm);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode def_member(void* u, OTF2_MetricMemberRef self, OTF2_StringRef name,
                             OTF2_StringRef, OTF2_MetricType, OTF2_MetricMode mode, OTF2_Type,
                             OTF2_Base, int64_t, OTF2_StringRef unit) {
  W(u).c->metric_member(self, W(u).str(name), W(u).str(unit), mode);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode def_class(void* u, OTF2_MetricRef self, uint8_t n,
                            const OTF2_MetricMemberRef* members, OTF2_MetricOccurrence,
                            OTF2_RecorderKind) {
  W(u).c->metric_class(self, n, members);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode def_instance(void* u, OTF2_MetricRef self, OTF2_MetricRef cls, OTF2_LocationRef,
                               OTF2_MetricScope, uint64_t) {
  W(u).c->metric_instance(self, cls);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode def_parameter(void* u, OTF2_ParameterRef self, OTF2_StringRef name,
                                OTF2_ParameterType) {
  W(u).c->parameter(self, W(u).str(name));
  return OTF2_CALLBACK_SUCCESS;
}

OTF2_CallbackCode evt_enter(OTF2_LocationRef loc, OTF2_TimeStamp t, void* u, OTF2_AttributeList* a,
                            OTF2_RegionRef region) {
  W(u).c->enter(loc, t, attributes(W(u), a), region);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode evt_leave(OTF2_LocationRef loc, OTF2_TimeStamp t, void* u, OTF2_AttributeList* a,
                            OTF2_RegionRef region) {
  W(u).c->leave(loc, t, attributes(W(u), a), region);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode evt_metric(OTF2_LocationRef loc, OTF2_TimeStamp t, void* u, OTF2_AttributeList* a,
                             OTF2_MetricRef metric, uint8_t n, const OTF2_Type* types,
                             const OTF2_MetricValue* values) {
  W(u).c->metric(loc, t, attributes(W(u), a), metric, n, types, values);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode evt_pstring(OTF2_LocationRef loc, OTF2_TimeStamp t, void* u,
                              OTF2_AttributeList* a, OTF2_ParameterRef p, OTF2_StringRef str) {
  W(u).c->parameter_string(loc, t, attributes(W(u), a), p, W(u).str(str));
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode evt_pint(OTF2_LocationRef loc, OTF2_TimeStamp t, void* u, OTF2_AttributeList* a,
                           OTF2_ParameterRef p, int64_t v) {
  W(u).c->parameter_int(loc, t, attributes(W(u), a), p, v);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode evt_puint(OTF2_LocationRef loc, OTF2_TimeStamp t, void* u, OTF2_AttributeList*,
                            OTF2_ParameterRef, uint64_t) {
  W(u).c->other_event(loc, t);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode evt_flush(OTF2_LocationRef loc, OTF2_TimeStamp t, void* u, OTF2_AttributeList*,
                            OTF2_TimeStamp) {
  W(u).c->other_event(loc, t);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode evt_onoff(OTF2_LocationRef loc, OTF2_TimeStamp t, void* u, OTF2_AttributeList*,
                            OTF2_MeasurementMode) {
  W(u).c->other_event(loc, t);
  return OTF2_CALLBACK_SUCCESS;
}

OTF2_CallbackCode evt_send(OTF2_LocationRef loc, OTF2_TimeStamp t, void* u, OTF2_AttributeList* a,
                           uint32_t receiver, OTF2_CommRef, uint32_t tag, uint64_t length) {
  W(u).c->mpi_message(loc, t, attributes(W(u), a), true, receiver, tag, length);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode evt_recv(OTF2_LocationRef loc, OTF2_TimeStamp t, void* u, OTF2_AttributeList* a,
                           uint32_t sender, OTF2_CommRef, uint32_t tag, uint64_t length) {
  W(u).c->mpi_message(loc, t, attributes(W(u), a), false, sender, tag, length);
  return OTF2_CALLBACK_SUCCESS;
}

struct reader_closer {
  void operator()(OTF2_Reader* r) const { OTF2_Reader_Close(r); }
};

}  // namespace

const std::string& walker::str(OTF2_StringRef r) const {
  static const std::string empty;
  auto it = strings.find(r);
  return it == strings.end() ? empty : it->second;
}

const std::string& attributes::name(OTF2_AttributeRef ref) const {
  auto it = w_.attribute_defs.find(ref);
  if (it != w_.attribute_defs.end()) return it->second.first;
  thread_local std::string undefined;
  undefined = "attribute " + std::to_string(ref);
  return undefined;
}

bool attributes::get(std::uint32_t i, OTF2_AttributeRef& ref, value& v) const {
  OTF2_Type type;
  OTF2_AttributeValue raw;
  if (!a_ || OTF2_AttributeList_GetAttributeByIndex(a_, i, &ref, &type, &raw) != OTF2_SUCCESS)
    return false;
  v = attribute_value(w_, type, raw);
  return true;
}

value attributes::decode(OTF2_Type type, const OTF2_AttributeValue& v) const {
  return attribute_value(w_, type, v);
}

double metric_value(OTF2_Type type, const OTF2_MetricValue& v) {
  switch (type) {
    case OTF2_TYPE_DOUBLE:
      return v.floating_point;
    case OTF2_TYPE_INT64:
      return static_cast<double>(v.signed_int);
    default:
      return static_cast<double>(v.unsigned_int);
  }
}

value attribute_value(const walker& w, OTF2_Type type, const OTF2_AttributeValue& v) {
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
      return w.str(v.stringRef);
    default:  // OTF2_TYPE_UINT64 and the reference types
      return std::uint64_t{v.uint64};
  }
}

void walker::walk(const std::string& anchor, consumer& cons) {
  c = &cons;
  std::unique_ptr<OTF2_Reader, reader_closer> r(OTF2_Reader_Open(anchor.c_str()));
  if (!r) throw std::runtime_error("cannot open the OTF2 archive " + anchor);
  OTF2_Reader_SetSerialCollectiveCallbacks(r.get());
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
  OTF2_GlobalDefReaderCallbacks_SetMetricInstanceCallback(dc, def_instance);
  OTF2_GlobalDefReaderCallbacks_SetParameterCallback(dc, def_parameter);
  OTF2_Reader_RegisterGlobalDefCallbacks(r.get(), gdr, dc, this);
  OTF2_GlobalDefReaderCallbacks_Delete(dc);
  uint64_t ndefs = 0;
  if (OTF2_Reader_ReadAllGlobalDefinitions(r.get(), gdr, &ndefs) != OTF2_SUCCESS)
    throw std::runtime_error("cannot read the definitions of " + anchor);
  OTF2_Reader_CloseGlobalDefReader(r.get(), gdr);

  uint32_t nprops = 0;
  char** names = nullptr;
  if (OTF2_Reader_GetPropertyNames(r.get(), &nprops, &names) == OTF2_SUCCESS && names) {
    for (uint32_t i = 0; i < nprops; ++i) {
      char* v = nullptr;
      if (OTF2_Reader_GetProperty(r.get(), names[i], &v) == OTF2_SUCCESS && v)
        cons.property(names[i], v);
      std::free(v);
    }
    std::free(names);
  }

  for (OTF2_LocationRef l : locations) OTF2_Reader_SelectLocation(r.get(), l);
  const bool defs = OTF2_Reader_OpenDefFiles(r.get()) == OTF2_SUCCESS;
  OTF2_Reader_OpenEvtFiles(r.get());
  for (OTF2_LocationRef l : locations) {
    if (defs) {
      if (OTF2_DefReader* dr = OTF2_Reader_GetDefReader(r.get(), l)) {
        uint64_t n = 0;
        OTF2_Reader_ReadAllLocalDefinitions(r.get(), dr, &n);
        OTF2_Reader_CloseDefReader(r.get(), dr);
      }
    }
    OTF2_Reader_GetEvtReader(r.get(), l);
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
  OTF2_GlobalEvtReaderCallbacks_SetParameterUnsignedIntCallback(ec, evt_puint);
  OTF2_GlobalEvtReaderCallbacks_SetBufferFlushCallback(ec, evt_flush);
  OTF2_GlobalEvtReaderCallbacks_SetMeasurementOnOffCallback(ec, evt_onoff);
  OTF2_GlobalEvtReaderCallbacks_SetMpiSendCallback(ec, evt_send);
  OTF2_GlobalEvtReaderCallbacks_SetMpiRecvCallback(ec, evt_recv);
  OTF2_Reader_RegisterGlobalEvtCallbacks(r.get(), ger, ec, this);
  OTF2_GlobalEvtReaderCallbacks_Delete(ec);
  uint64_t nevents = 0;
  const OTF2_ErrorCode rc = OTF2_Reader_ReadAllGlobalEvents(r.get(), ger, &nevents);
  OTF2_Reader_CloseGlobalEvtReader(r.get(), ger);
  OTF2_Reader_CloseEvtFiles(r.get());
  if (rc != OTF2_SUCCESS)
    throw std::runtime_error("cannot read the events of " + anchor + ": " +
                             OTF2_Error_GetDescription(rc));
}

}  // namespace grain::instrumentation::otf2_walk

#endif  // GRAIN_WITH_OTF2
