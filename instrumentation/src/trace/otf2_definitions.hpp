#pragma once
// The definitions of a finished OTF2 archive (otf2_definitions.cpp): what the ranks exchange,
// the mapping tables they write, and the global definitions rank 0 writes.
#include <otf2/otf2.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "definitions_exchange.hpp"
#include "session_core.hpp"

namespace grain::instrumentation::trace_detail {

// A rank's own ids of strings, metrics and named attributes, numbered in the order the rank
// meets them while it records; at the end they go into its local_definitions.
class local_ids {
 public:
  local_ids() { string(""); }  // string 0: the empty string
  OTF2_StringRef string(const std::string& s);
  std::uint32_t metric(const std::string& name, const std::string& unit,
                       const std::string& description, OTF2_MetricMode mode);
  // A double attribute by its full name ("trigger:<counter>", "<prefix>:<field>"), numbered
  // after the fixed ones.
  std::uint32_t named_attribute(const std::string& name);
  // The strings, metrics and named attributes, in their ids' order.
  void describe(local_definitions& d) const;

 private:
  std::map<std::string, OTF2_StringRef> strings_;
  std::vector<std::string> string_list_;
  std::map<std::string, std::uint32_t> metric_ids_;
  std::vector<exchanged_metric> metrics_;
  std::map<std::string, std::uint32_t> trigger_ids_;
  std::vector<std::string> trigger_list_;
};

// Every rank's definitions to rank 0, which unifies them; each rank's mappings back.
// Collective over `group`; `ranks` and `unified` are filled on rank 0 only.
void exchange_definitions(trace_group& group, const local_definitions& mine,
                          std::vector<local_definitions>& ranks, unified_definitions& unified,
                          id_mappings& my_mappings);

// A rank's local-to-global id table of one kind (nothing for an identity); false when OTF2
// refused it.
bool write_mapping(OTF2_DefWriter* dw, OTF2_MappingType type,
                   const std::vector<std::uint64_t>& map);

// Rank 0 (or the only rank): the global definitions of every rank's locations, written and
// closed; false when OTF2 refused the writer or its close.
bool write_global_definitions(OTF2_Archive* archive, const session_core& s, unified_definitions& u,
                              const std::vector<local_definitions>& ranks);

}  // namespace grain::instrumentation::trace_detail
