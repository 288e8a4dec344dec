#pragma once
// Where a worker's chunks live: 2 MiB slabs of eight 256 KiB chunks, mapped in one
// madvise(MADV_POPULATE_WRITE) when the slab is made. A trace whose converter waits for a spare
// core (convert_pacing.hpp) writes into fresh memory for the whole run, and in a VM the 512
// first-touch faults of a slab's 4 KiB pages cost more than one call that maps them all.
// Transparent huge pages (one fault per slab) were asked for until issue 13's fourth round, but
// a free 2 MiB block is what a guest kernel hands back to its hypervisor, so a huge page is
// memory the host must back afresh: on the Intel guest of 2026-11-25 that cost 13-35 ms of
// system time per 16 MiB of records, where populated 4 KiB pages cost 3-8 (docs/tracing.md,
// "Measured (issue 13, fourth round)"). Chunks are recycled by their chunk_buffer and never
// freed one by one; the slabs go at its end.
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
