#pragma once
// One pass over an OTF2 archive through the OTF2 C API, for every reader grain has: the global
// definitions (strings resolved), the archive's properties, then every event of every location
// in time order (OTF2's global event reader, as otf2-print). What to do with them is the
// consumer's: read_otf2 (reader.cpp) keeps the events in memory for tests and small tools,
// grain-trace-read (tool/grain_trace_read.cpp) aggregates a large trace as it goes. Kept in one
// place so that both read archives alike (the OTF2 calls, the order they need, attribute
// decoding, error messages).
#include <otf2/otf2.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace grain::instrumentation::otf2_walk {

using value = std::variant<std::uint64_t, std::int64_t, double, std::string>;

class walker;

// An event's attribute list, decoded on request (most consumers look at one or two).
class attributes {
 public:
  attributes(const walker& w, OTF2_AttributeList* a) : w_(w), a_(a) {}
  std::uint32_t size() const { return a_ ? OTF2_AttributeList_GetNumberOfElements(a_) : 0; }
  // The i-th attribute's definition reference and value; false if OTF2 cannot return it.
  bool get(std::uint32_t i, OTF2_AttributeRef& ref, value& v) const;
  // The same undecoded, for readers that decode only the attributes they look at.
  bool raw(std::uint32_t i, OTF2_AttributeRef& ref, OTF2_Type& type, OTF2_AttributeValue& v) const {
    return a_ && OTF2_AttributeList_GetAttributeByIndex(a_, i, &ref, &type, &v) == OTF2_SUCCESS;
  }
  value decode(OTF2_Type type, const OTF2_AttributeValue& v) const;
  const std::string& name(OTF2_AttributeRef ref) const;  // "attribute N" when undefined

 private:
  const walker& w_;
  OTF2_AttributeList* a_;
};

// What a reader implements; every callback does nothing by default. Names are resolved from
// the string definitions ("" for an undefined string).
class consumer {
 public:
  virtual ~consumer() = default;
  // Definitions.
  virtual void clock(std::uint64_t /*resolution*/, std::uint64_t /*offset*/,
                     std::uint64_t /*length*/, std::uint64_t /*realtime*/) {}
  virtual void attribute(OTF2_AttributeRef, const std::string& /*name*/, OTF2_Type) {}
  virtual void location(OTF2_LocationRef, const std::string& /*name*/, OTF2_LocationType,
                        std::uint64_t /*events*/, OTF2_LocationGroupRef) {}
  virtual void region(OTF2_RegionRef, const std::string& /*name*/, OTF2_RegionRole, OTF2_Paradigm) {
  }
  virtual void metric_member(OTF2_MetricMemberRef, const std::string& /*name*/,
                             const std::string& /*unit*/, OTF2_MetricMode) {}
  virtual void metric_class(OTF2_MetricRef, std::uint8_t /*n*/, const OTF2_MetricMemberRef*) {}
  virtual void metric_instance(OTF2_MetricRef, OTF2_MetricRef /*metric_class*/) {}
  virtual void parameter(OTF2_ParameterRef, const std::string& /*name*/) {}
  // After the definitions, every archive property (name, value).
  virtual void property(const std::string& /*name*/, const std::string& /*value*/) {}
  // Events.
  virtual void enter(OTF2_LocationRef, OTF2_TimeStamp, const attributes&, OTF2_RegionRef) {}
  virtual void leave(OTF2_LocationRef, OTF2_TimeStamp, const attributes&, OTF2_RegionRef) {}
  virtual void metric(OTF2_LocationRef, OTF2_TimeStamp, const attributes&, OTF2_MetricRef,
                      std::uint8_t /*n*/, const OTF2_Type*, const OTF2_MetricValue*) {}
  virtual void parameter_string(OTF2_LocationRef, OTF2_TimeStamp, const attributes&,
                                OTF2_ParameterRef, const std::string& /*text*/) {}
  virtual void parameter_int(OTF2_LocationRef, OTF2_TimeStamp, const attributes&, OTF2_ParameterRef,
                             std::int64_t) {}
  // A message of a multi-rank trace (MpiSend: `sent`, peer = receiver; MpiRecv: peer = sender).
  virtual void mpi_message(OTF2_LocationRef, OTF2_TimeStamp, const attributes&, bool /*sent*/,
                           std::uint32_t /*peer*/, std::uint32_t /*tag*/, std::uint64_t /*bytes*/) {
  }
  // An event of another kind grain neither writes nor reads: unsigned parameter, buffer flush,
  // measurement on/off (tools count them; the rest of the record kinds are not delivered).
  virtual void other_event(OTF2_LocationRef, OTF2_TimeStamp) {}
};

// A metric value as a double (OTF2_TYPE_DOUBLE, INT64, otherwise UINT64).
double metric_value(OTF2_Type type, const OTF2_MetricValue& v);

// An attribute value of the given OTF2 type (strings resolved through the walker).
value attribute_value(const walker& w, OTF2_Type type, const OTF2_AttributeValue& v);

class walker {
 public:
  // Reads the whole archive into c. Throws std::runtime_error ("cannot open the OTF2 archive
  // A", "cannot read the definitions of A", "cannot read the events of A: why").
  void walk(const std::string& anchor, consumer& c);

  const std::string& str(OTF2_StringRef r) const;

  // Definition state the callbacks need (filled while the definitions are read).
  std::unordered_map<OTF2_StringRef, std::string> strings;
  std::unordered_map<OTF2_AttributeRef, std::pair<std::string, OTF2_Type>> attribute_defs;
  std::vector<OTF2_LocationRef> locations;
  consumer* c = nullptr;
};

}  // namespace grain::instrumentation::otf2_walk
