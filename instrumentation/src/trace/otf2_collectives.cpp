// OTF2 collective callbacks over a trace_group (otf2_collectives.hpp). OTF2 counts in
// elements of an OTF2_Type; the group moves bytes.
#if GRAIN_WITH_OTF2  // CMake GRAIN_WITH_OTF2; without it nothing here is built
#include "otf2_collectives.hpp"

#include <exception>
#include <vector>

namespace grain::instrumentation::trace_detail {

namespace {

std::size_t type_size(OTF2_Type t) {
  switch (t) {
    case OTF2_TYPE_UINT8:
    case OTF2_TYPE_INT8:
      return 1;
    case OTF2_TYPE_UINT16:
    case OTF2_TYPE_INT16:
      return 2;
    case OTF2_TYPE_UINT32:
    case OTF2_TYPE_INT32:
    case OTF2_TYPE_FLOAT:
      return 4;
    default:
      return 8;  // UINT64, INT64, DOUBLE
  }
}

trace_group& group_of(void* user) {
  return *static_cast<trace_group*>(user);
}

template <class F>
OTF2_CallbackCode guarded(F&& f) noexcept {
  try {
    f();
    return OTF2_CALLBACK_SUCCESS;
  } catch (...) {
    return OTF2_CALLBACK_ERROR;
  }
}

OTF2_CallbackCode get_size(void* user, OTF2_CollectiveContext*, uint32_t* size) {
  *size = group_of(user).size();
  return OTF2_CALLBACK_SUCCESS;
}

OTF2_CallbackCode get_rank(void* user, OTF2_CollectiveContext*, uint32_t* rank) {
  *rank = group_of(user).rank();
  return OTF2_CALLBACK_SUCCESS;
}

OTF2_CallbackCode barrier(void* user, OTF2_CollectiveContext*) {
  return guarded([&] { group_of(user).barrier(); });
}

OTF2_CallbackCode bcast(void* user, OTF2_CollectiveContext*, void* data, uint32_t n, OTF2_Type type,
                        uint32_t root) {
  return guarded([&] { group_of(user).broadcast(data, n * type_size(type), root); });
}

OTF2_CallbackCode gather(void* user, OTF2_CollectiveContext*, const void* in, void* out, uint32_t n,
                         OTF2_Type type, uint32_t root) {
  return guarded([&] {
    trace_group& g = group_of(user);
    const std::vector<std::size_t> counts(g.size(), n * type_size(type));
    g.gatherv(in, n * type_size(type), out, counts.data(), root);
  });
}

OTF2_CallbackCode gatherv(void* user, OTF2_CollectiveContext*, const void* in, uint32_t n_in,
                          void* out, const uint32_t* n_out, OTF2_Type type, uint32_t root) {
  return guarded([&] {
    trace_group& g = group_of(user);
    std::vector<std::size_t> counts(g.size(), 0);
    if (g.rank() == root)
      for (unsigned r = 0; r < g.size(); ++r) counts[r] = n_out[r] * type_size(type);
    g.gatherv(in, n_in * type_size(type), out, counts.data(), root);
  });
}

OTF2_CallbackCode scatter(void* user, OTF2_CollectiveContext*, const void* in, void* out,
                          uint32_t n, OTF2_Type type, uint32_t root) {
  return guarded([&] {
    trace_group& g = group_of(user);
    const std::vector<std::size_t> counts(g.size(), n * type_size(type));
    g.scatterv(in, counts.data(), out, n * type_size(type), root);
  });
}

OTF2_CallbackCode scatterv(void* user, OTF2_CollectiveContext*, const void* in,
                           const uint32_t* n_in, void* out, uint32_t n_out, OTF2_Type type,
                           uint32_t root) {
  return guarded([&] {
    trace_group& g = group_of(user);
    std::vector<std::size_t> counts(g.size(), 0);
    if (g.rank() == root)
      for (unsigned r = 0; r < g.size(); ++r) counts[r] = n_in[r] * type_size(type);
    g.scatterv(in, counts.data(), out, n_out * type_size(type), root);
  });
}

const OTF2_CollectiveCallbacks callbacks = {
    nullptr,  // release: the group outlives the archive
    get_size, get_rank,
    nullptr,  // create_local_comm: no local communicators (POSIX substrate)
    nullptr,  // free_local_comm
    barrier,  bcast,    gather, gatherv, scatter, scatterv};

}  // namespace

const OTF2_CollectiveCallbacks* otf2_group_callbacks() noexcept {
  return &callbacks;
}

bool all_ranks_agree(trace_group& group, bool mine) {
  const unsigned n = group.size();
  std::vector<unsigned char> all(n, 0);
  const unsigned char me = mine ? 1 : 0;
  const std::vector<std::size_t> counts(n, 1);
  group.gatherv(&me, 1, all.data(), counts.data(), 0);
  unsigned char verdict = 1;
  for (unsigned char a : all) verdict &= a;
  group.broadcast(&verdict, 1, 0);
  return verdict != 0;
}

}  // namespace grain::instrumentation::trace_detail

#endif  // GRAIN_WITH_OTF2
