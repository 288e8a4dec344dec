#pragma once
// How grain lays an OTF2 archive out: the attribute and parameter ids, the locations each rank has
// after its workers', the parcels' communicator and its groups, and how a location's id is made.
#include <otf2/otf2.h>

#include <cstdint>

namespace grain::instrumentation::trace_detail {

// Attribute ids (OTF2 AttributeRef); the named double attributes ("trigger:<counter>" of a
// decision, "<prefix>:<field>" of a point event) follow fixed_attributes.
enum attribute_id : std::uint32_t {
  attr_guid = 0,
  attr_parent = 1,
  attr_resumed_child = 2,
  attr_rule = 3,
  attr_knob = 4,
  attr_old = 5,
  attr_new = 6,
  attr_requested = 7,
  attr_clamped = 8,
  attr_reason = 9,
  attr_parcels = 10,
  fixed_attributes = 11
};

// Parameter ids (OTF2 ParameterRef): a decision's reason, knob, old and new values (integer
// knobs); a point event's name (event_kinds.hpp).
enum parameter_id : std::uint32_t {
  param_reason = 0,
  param_knob = 1,
  param_old = 2,
  param_new = 3,
  param_event = 4
};

// Location indices after the workers' (0..workers-1).
enum aux_location : unsigned { metric_location = 0, policy_location = 1, network_location = 2 };

// The communicator of the parcels' MpiSend/MpiRecv records, and its groups.
constexpr OTF2_CommRef parcels_comm = 0;
constexpr OTF2_GroupRef comm_locations_group = 0, comm_ranks_group = 1;

// A location's id: the rank in the high half, the location's index on its rank in the low half.
inline OTF2_LocationRef otf2_location(std::uint64_t rank, std::uint64_t index) {
  return (rank << 32) | index;
}

}  // namespace grain::instrumentation::trace_detail
