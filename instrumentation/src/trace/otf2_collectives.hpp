#pragma once
// OTF2's collective callbacks over a trace_group, so that the processes of an MPI job write one
// archive (OTF2 needs them to create the directories once, to close the event files together
// and to write the anchor and global definitions on rank 0 only).
#include <otf2/otf2.h>

#include "grain/instrumentation/trace_group.hpp"

namespace grain::instrumentation::trace_detail {

// For OTF2_Archive_SetCollectiveCallbacks(archive, otf2_group_callbacks(), group, nullptr,
// nullptr): the group is the user data and there is no local communicator.
const OTF2_CollectiveCallbacks* otf2_group_callbacks() noexcept;

// True when `mine` is true on every rank of `group` (collective).
bool all_ranks_agree(trace_group& group, bool mine);

}  // namespace grain::instrumentation::trace_detail
