// The definitions of a finished archive: the ranks' exchange, the mapping tables, and the global
// definitions rank 0 writes (system tree, locations, regions, attributes, metrics, the parcels'
// communicator).
#if GRAIN_WITH_OTF2  // CMake GRAIN_WITH_OTF2; without it nothing here is built
#include "otf2_definitions.hpp"

#include <algorithm>
#include <array>
#include <numeric>
#include <string>
#include <utility>

#include "otf2_layout.hpp"

namespace grain::instrumentation::trace_detail {

OTF2_StringRef local_ids::string(const std::string& s) {
  auto it = strings_.find(s);
  if (it != strings_.end()) return it->second;
  const auto id = static_cast<OTF2_StringRef>(string_list_.size());
  strings_.emplace(s, id);
  string_list_.push_back(s);
  return id;
}

std::uint32_t local_ids::metric(const std::string& name, const std::string& unit,
                                const std::string& description, OTF2_MetricMode mode) {
  auto it = metric_ids_.find(name);
  if (it != metric_ids_.end()) return it->second;
  const auto id = static_cast<std::uint32_t>(metrics_.size());
  metric_ids_.emplace(name, id);
  metrics_.push_back({name, unit, description, static_cast<std::uint8_t>(mode)});
  return id;
}

std::uint32_t local_ids::named_attribute(const std::string& name) {
  auto it = trigger_ids_.find(name);
  if (it != trigger_ids_.end()) return it->second;
  const auto id = static_cast<std::uint32_t>(fixed_attributes + trigger_list_.size());
  trigger_ids_.emplace(name, id);
  trigger_list_.push_back(name);
  return id;
}

void local_ids::describe(local_definitions& d) const {
  d.strings = string_list_;
  d.metrics = metrics_;
  d.triggers = trigger_list_;
}

void exchange_definitions(trace_group& group, const local_definitions& mine,
                          std::vector<local_definitions>& ranks, unified_definitions& unified,
                          id_mappings& my_mappings) {
  const unsigned n = group.size();
  const bool root = group.rank() == 0;
  const std::vector<char> blob = encode(mine);
  std::vector<std::uint64_t> sizes(n, 0);
  const std::uint64_t my_size = blob.size();
  const std::vector<std::size_t> eight(n, sizeof(std::uint64_t));
  group.gatherv(&my_size, sizeof my_size, sizes.data(), eight.data(), 0);
  std::vector<std::size_t> counts(sizes.begin(), sizes.end());
  std::vector<char> all;
  if (root) all.resize(std::accumulate(counts.begin(), counts.end(), std::size_t{0}));
  group.gatherv(blob.data(), blob.size(), all.data(), counts.data(), 0);

  std::vector<char> maps_out;
  std::vector<std::uint64_t> map_sizes(n, 0);
  if (root) {
    std::size_t at = 0;
    for (unsigned r = 0; r < n; ++r) {
      ranks.push_back(decode_definitions(all.data() + at, counts[r]));
      at += counts[r];
    }
    unified = unify(ranks, fixed_attributes);
    for (unsigned r = 0; r < n; ++r) {
      const std::vector<char> m = encode(unified.per_rank[r]);
      map_sizes[r] = m.size();
      maps_out.insert(maps_out.end(), m.begin(), m.end());
    }
  }
  std::uint64_t my_map_size = 0;
  group.scatterv(map_sizes.data(), eight.data(), &my_map_size, sizeof my_map_size, 0);
  std::vector<std::size_t> map_counts(map_sizes.begin(), map_sizes.end());
  std::vector<char> my_maps(static_cast<std::size_t>(my_map_size));
  group.scatterv(maps_out.data(), map_counts.data(), my_maps.data(), my_maps.size(), 0);
  my_mappings = decode_mappings(my_maps.data(), my_maps.size());
}

bool write_mapping(OTF2_DefWriter* dw, OTF2_MappingType type,
                   const std::vector<std::uint64_t>& map) {
  bool identity = true;
  for (std::size_t i = 0; i < map.size() && identity; ++i) identity = map[i] == i;
  if (identity) return true;  // (OTF2 would return no map for it)
  OTF2_IdMap* m = OTF2_IdMap_CreateFromUint64Array(map.size(), map.data(), true);
  if (!m) return false;
  const bool ok = OTF2_DefWriter_WriteMappingTable(dw, type, m) == OTF2_SUCCESS;
  OTF2_IdMap_Free(m);
  return ok;
}

namespace {

void write_global_definitions(OTF2_GlobalDefWriter* g, const session_core& s,
                              unified_definitions& u, const std::vector<local_definitions>& ranks) {
  // Make every string first, then write strings before what refers to them.
  const OTF2_StringRef s_empty = u.string_id("");
  std::vector<OTF2_StringRef> region_names;
  region_names.reserve(u.regions.size());
  for (auto& r : u.regions) region_names.push_back(u.string_id(r.name));
  const std::vector<std::pair<std::string, std::string>> fixed_attrs = {
      {"GUID", "task GUID"},
      {"Parent GUID", "GUID of the task that spawned it (0: main thread)"},
      {"Resumed inline child",
       "this Enter continues an inline parent whose child (this GUID) resumed here; not a "
       "phase of its own"},
      {"rule", "policy rule that took the decision"},
      {"knob", "knob changed"},
      {"old_value", "knob value before"},
      {"new_value", "knob value after"},
      {"requested", "value asked for before clamping"},
      {"clamped", "1 if the request was clamped to the knob's range"},
      {"reason", "why the rule changed the knob"},
      {"parcels", "parcels carried by the message (more than 1: coalesced)"}};
  std::vector<std::pair<OTF2_StringRef, OTF2_StringRef>> attr_strings;
  attr_strings.reserve(fixed_attrs.size());
  for (auto& [n, d] : fixed_attrs) attr_strings.emplace_back(u.string_id(n), u.string_id(d));
  std::vector<OTF2_StringRef> trigger_names, trigger_descs;
  const OTF2_StringRef s_trigger_desc = u.string_id("counter value behind the decision"),
                       s_field_desc = u.string_id("a value of the point event (docs/tracing.md)");
  for (auto& t : u.triggers) {
    trigger_names.push_back(u.string_id(t));
    trigger_descs.push_back(t.rfind("trigger:", 0) == 0 ? s_trigger_desc : s_field_desc);
  }
  // One system tree node per host, under a "job" node when the ranks run on several.
  std::vector<std::string> hosts;
  for (auto& d : ranks)
    if (std::find(hosts.begin(), hosts.end(), d.host) == hosts.end()) hosts.push_back(d.host);
  const bool several_hosts = hosts.size() > 1;
  const OTF2_StringRef s_node = u.string_id("node"), s_job = u.string_id("grain job"),
                       s_machine = u.string_id("machine");
  std::vector<OTF2_StringRef> host_names;
  host_names.reserve(hosts.size());
  for (auto& h : hosts) host_names.push_back(u.string_id(h));
  std::vector<OTF2_StringRef> group_names;
  std::vector<std::vector<OTF2_StringRef>> loc_names;
  for (auto& d : ranks) {
    group_names.push_back(u.string_id("locality " + std::to_string(d.rank)));
    std::vector<OTF2_StringRef> names;
    for (unsigned w = 0; w < d.workers; ++w)
      names.push_back(u.string_id("worker " + std::to_string(w)));
    names.push_back(u.string_id("runtime counters"));
    names.push_back(u.string_id("policy engine"));
    if (ranks.size() > 1) names.push_back(u.string_id("network"));
    loc_names.push_back(std::move(names));
  }
  const OTF2_StringRef p_reason = u.string_id("reason"), p_knob = u.string_id("knob"),
                       p_old = u.string_id("old_value (int)"),
                       p_new = u.string_id("new_value (int)"), p_event = u.string_id("event");
  const OTF2_StringRef s_comm = u.string_id("grain parcels (MPI_COMM_WORLD duplicate)"),
                       s_comm_locations = u.string_id("network locations"),
                       s_comm_ranks = u.string_id("ranks");
  std::vector<std::array<OTF2_StringRef, 3>> metric_strings;
  for (auto& m : u.metrics)
    metric_strings.push_back(
        {u.string_id(m.name), u.string_id(m.description), u.string_id(m.unit)});

  // Rank 0's realtime at its start, moved to the earliest start of any rank.
  const std::uint64_t realtime = s.realtime_at_start - (s.start_ns - u.start_ns);
  OTF2_GlobalDefWriter_WriteClockProperties(g, 1'000'000'000ull, u.start_ns, u.end_ns - u.start_ns,
                                            realtime);
  for (std::size_t i = 0; i < u.strings.size(); ++i)
    OTF2_GlobalDefWriter_WriteString(g, static_cast<OTF2_StringRef>(i), u.strings[i].c_str());
  const OTF2_SystemTreeNodeRef first_host = several_hosts ? 1 : 0;
  if (several_hosts)
    OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, s_job, s_machine,
                                             OTF2_UNDEFINED_SYSTEM_TREE_NODE);
  for (std::size_t h = 0; h < hosts.size(); ++h)
    OTF2_GlobalDefWriter_WriteSystemTreeNode(g, static_cast<OTF2_SystemTreeNodeRef>(first_host + h),
                                             host_names[h], s_node,
                                             several_hosts ? 0 : OTF2_UNDEFINED_SYSTEM_TREE_NODE);
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const local_definitions& d = ranks[r];
    const auto host = static_cast<OTF2_SystemTreeNodeRef>(
        first_host + (std::find(hosts.begin(), hosts.end(), d.host) - hosts.begin()));
    OTF2_GlobalDefWriter_WriteLocationGroup(g, d.rank, group_names[r],
                                            OTF2_LOCATION_GROUP_TYPE_PROCESS, host,
                                            OTF2_UNDEFINED_LOCATION_GROUP);
    for (std::size_t i = 0; i < loc_names[r].size(); ++i) {
      const bool metric = i == d.workers + metric_location;
      OTF2_GlobalDefWriter_WriteLocation(
          g, otf2_location(d.rank, i), loc_names[r][i],
          metric ? OTF2_LOCATION_TYPE_METRIC : OTF2_LOCATION_TYPE_CPU_THREAD,
          i < d.events.size() ? d.events[i] : 0, d.rank);
    }
  }
  for (std::size_t i = 0; i < u.regions.size(); ++i) {
    const auto kind = static_cast<region_kind>(u.regions[i].kind);
    const OTF2_RegionRole role = kind == region_kind::task   ? OTF2_REGION_ROLE_TASK
                                 : kind == region_kind::idle ? OTF2_REGION_ROLE_ARTIFICIAL
                                                             : OTF2_REGION_ROLE_FUNCTION;
    OTF2_GlobalDefWriter_WriteRegion(g, static_cast<OTF2_RegionRef>(i), region_names[i],
                                     region_names[i], s_empty, role, OTF2_PARADIGM_USER,
                                     OTF2_REGION_FLAG_NONE, s_empty, 0, 0);
  }
  const OTF2_Type attr_types[fixed_attributes] = {
      OTF2_TYPE_UINT64, OTF2_TYPE_UINT64, OTF2_TYPE_UINT64, OTF2_TYPE_STRING,
      OTF2_TYPE_STRING, OTF2_TYPE_DOUBLE, OTF2_TYPE_DOUBLE, OTF2_TYPE_DOUBLE,
      OTF2_TYPE_UINT8,  OTF2_TYPE_STRING, OTF2_TYPE_UINT32};
  for (std::uint32_t i = 0; i < fixed_attributes; ++i)
    OTF2_GlobalDefWriter_WriteAttribute(g, i, attr_strings[i].first, attr_strings[i].second,
                                        attr_types[i]);
  for (std::size_t i = 0; i < trigger_names.size(); ++i)
    OTF2_GlobalDefWriter_WriteAttribute(g, static_cast<OTF2_AttributeRef>(fixed_attributes + i),
                                        trigger_names[i], trigger_descs[i], OTF2_TYPE_DOUBLE);
  OTF2_GlobalDefWriter_WriteParameter(g, param_reason, p_reason, OTF2_PARAMETER_TYPE_STRING);
  OTF2_GlobalDefWriter_WriteParameter(g, param_knob, p_knob, OTF2_PARAMETER_TYPE_STRING);
  OTF2_GlobalDefWriter_WriteParameter(g, param_old, p_old, OTF2_PARAMETER_TYPE_INT64);
  OTF2_GlobalDefWriter_WriteParameter(g, param_new, p_new, OTF2_PARAMETER_TYPE_INT64);
  OTF2_GlobalDefWriter_WriteParameter(g, param_event, p_event, OTF2_PARAMETER_TYPE_STRING);
  for (std::size_t i = 0; i < u.metrics.size(); ++i) {
    const auto id = static_cast<std::uint32_t>(i);
    OTF2_GlobalDefWriter_WriteMetricMember(
        g, id, metric_strings[i][0], metric_strings[i][1], OTF2_METRIC_TYPE_USER,
        static_cast<OTF2_MetricMode>(u.metrics[i].mode), OTF2_TYPE_DOUBLE, OTF2_BASE_DECIMAL, 0,
        metric_strings[i][2]);
    OTF2_MetricMemberRef member = id;
    OTF2_GlobalDefWriter_WriteMetricClass(g, id, 1, &member, OTF2_METRIC_ASYNCHRONOUS,
                                          OTF2_RECORDER_KIND_ABSTRACT);
  }
  if (ranks.size() > 1) {
    // The parcels' communicator: rank r of it is rank r's network location.
    std::vector<std::uint64_t> network_locations, rank_ids;
    for (auto& d : ranks) {
      network_locations.push_back(otf2_location(d.rank, d.workers + network_location));
      rank_ids.push_back(rank_ids.size());
    }
    OTF2_GlobalDefWriter_WriteGroup(
        g, comm_locations_group, s_comm_locations, OTF2_GROUP_TYPE_COMM_LOCATIONS,
        OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE,
        static_cast<std::uint32_t>(network_locations.size()), network_locations.data());
    OTF2_GlobalDefWriter_WriteGroup(g, comm_ranks_group, s_comm_ranks, OTF2_GROUP_TYPE_COMM_GROUP,
                                    OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE,
                                    static_cast<std::uint32_t>(rank_ids.size()), rank_ids.data());
    OTF2_GlobalDefWriter_WriteComm(g, parcels_comm, s_comm, comm_ranks_group, OTF2_UNDEFINED_COMM,
                                   OTF2_COMM_FLAG_NONE);
  }
}

}  // namespace

bool write_global_definitions(OTF2_Archive* archive, const session_core& s, unified_definitions& u,
                              const std::vector<local_definitions>& ranks) {
  OTF2_GlobalDefWriter* g = OTF2_Archive_GetGlobalDefWriter(archive);
  if (!g) return false;
  write_global_definitions(g, s, u, ranks);
  return OTF2_Archive_CloseGlobalDefWriter(archive, g) == OTF2_SUCCESS;
}

}  // namespace grain::instrumentation::trace_detail

#endif  // GRAIN_WITH_OTF2
