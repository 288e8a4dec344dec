#pragma once
// The definitions of a multi-rank OTF2 archive. Every rank writes its events with its own ids
// (strings, regions, metrics, attributes are numbered in the order the rank met them); at the
// end each rank sends what its ids mean to rank 0, which unifies them — the same region name
// and kind on every rank becomes one global region — writes the global definitions, and sends
// each rank the mapping from its ids to the global ones. The ranks write those mappings as
// OTF2 mapping tables next to their events, and readers translate on the fly (the way
// Score-P unifies its archives). Pure data and byte encodings: testable without MPI.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace grain::instrumentation::trace_detail {

struct exchanged_metric {
  std::string name, unit, description;
  std::uint8_t mode = 0;  // OTF2_MetricMode
  bool operator==(const exchanged_metric&) const = default;
};

struct exchanged_region {
  std::string name;
  std::uint8_t kind = 0;  // region_kind
  bool operator==(const exchanged_region&) const = default;
};

// One rank's side (timestamps already on rank 0's clock).
struct local_definitions {
  std::uint32_t rank = 0;
  std::string host;
  std::uint32_t workers = 0;
  std::uint64_t start_ns = 0, end_ns = 0;
  std::vector<std::string> strings;       // local string id = index
  std::vector<exchanged_region> regions;  // local region id = index
  std::vector<exchanged_metric> metrics;  // local metric id = index
  std::vector<std::string> triggers;      // local attribute id = fixed_attributes + index
  std::vector<std::uint64_t> events;      // per location index (workers + aux locations)
};

std::vector<char> encode(const local_definitions& d);
// Throws std::runtime_error on a malformed or truncated buffer.
local_definitions decode_definitions(const char* data, std::size_t size);

// Local id -> global id, per kind of definition.
struct id_mappings {
  std::vector<std::uint64_t> strings, regions, metrics, attributes;
  bool operator==(const id_mappings&) const = default;
};

std::vector<char> encode(const id_mappings& m);
id_mappings decode_mappings(const char* data, std::size_t size);

struct unified_definitions {
  std::vector<std::string> strings;  // global string id = index (0: "")
  std::vector<exchanged_region> regions;
  std::vector<exchanged_metric> metrics;
  std::vector<std::string> triggers;       // global attribute id = fixed_attributes + index
  std::vector<id_mappings> per_rank;       // indexed like `ranks`
  std::uint64_t start_ns = 0, end_ns = 0;  // the earliest start and latest end of any rank
  // Adds s to the global string table (or finds it) and returns its global id.
  std::uint32_t string_id(const std::string& s);
  std::map<std::string, std::uint32_t> string_index;  // strings[i] -> i
};

// `fixed_attributes`: the attribute ids every rank has in common (0..fixed-1).
unified_definitions unify(const std::vector<local_definitions>& ranks,
                          std::uint32_t fixed_attributes);

}  // namespace grain::instrumentation::trace_detail
