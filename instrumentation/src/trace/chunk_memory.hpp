#pragma once
// Where a worker's chunks live: 2 MiB slabs of eight 256 KiB chunks, asked for as transparent
// huge pages. A trace whose converter waits for a spare core (convert_pacing.hpp) writes into
// fresh memory for the whole run, and first-touch faults of 4 KiB pages cost ≈ 9 ms per 16 MiB
// in this VM (≈ 18 ns per traced task); a 2 MiB page is one fault (≈ 1 ms per 16 MiB). Where
// huge pages are off (transparent_hugepage=never) the slabs are ordinary pages. Chunks are
// recycled by their chunk_buffer and never freed one by one; the slabs go at its end.
#include <cstddef>
#include <vector>

namespace grain::instrumentation::trace_detail {

class chunk_slabs {
 public:
  static constexpr std::size_t slab_bytes = std::size_t{2} << 20;

  chunk_slabs() = default;
  chunk_slabs(const chunk_slabs&) = delete;
  chunk_slabs& operator=(const chunk_slabs&) = delete;
  ~chunk_slabs();

  // A new slab of slab_bytes, 2 MiB-aligned; throws std::bad_alloc when there is no memory.
  void* allocate();

 private:
  std::vector<void*> slabs_;
};

}  // namespace grain::instrumentation::trace_detail
