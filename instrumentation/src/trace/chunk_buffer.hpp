#pragma once
// A worker's records in chunks that only it writes, and their lock-free way to the back end:
// full chunks are published on a per-worker stack; the OTF2 back end's converter thread turns
// them into OTF2 events, the Perfetto back end's into JSON slices, and they give them back.
// Separate from the recorder because the back ends (the consumer side) use it too.
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "chunk_memory.hpp"
#include "record.hpp"

namespace grain::instrumentation::trace_detail {

// 256 KiB with its header, eight to a 2 MiB slab (chunk_memory.hpp).
inline constexpr std::size_t chunk_units = 65533;

struct chunk {
  chunk* next = nullptr;
  std::uint32_t count = 0;  // units written
  unit units[chunk_units];
};
static_assert(sizeof(chunk) * 8 == chunk_slabs::slab_bytes);

struct chunk_buffer {
  // The chunk being written ([cur, end) free), its owner, spare chunks.
  unit* cur = nullptr;
  unit* end = nullptr;
  chunk* current = nullptr;
  chunk* spare = nullptr;             // the worker's own free list (taken from `returned`)
  std::uint64_t units_published = 0;  // in the chunks published so far
  alignas(64) std::atomic<chunk*> published{nullptr};  // full chunks, newest first
  std::atomic<std::uint32_t> unconverted{0};           // published, not given back yet
  alignas(64) std::atomic<chunk*> returned{nullptr};   // chunks given back by the consumer
  chunk* taken = nullptr;  // the consumer's: published chunks it took, oldest first
  chunk_slabs slabs;       // the memory of every chunk above

  chunk_buffer() = default;
  chunk_buffer(const chunk_buffer&) = delete;
  chunk_buffer& operator=(const chunk_buffer&) = delete;
  ~chunk_buffer();

  // Producer side (the worker), when [cur, end) has no room for a record: publishes the current
  // chunk (true) if there is one and starts the next, from the spares the consumer gave back or
  // (at start, or while the converter waits) from a new slab.
  [[gnu::noinline]] bool next_chunk();
  // Units written so far (the worker, or the back end once it took the buffer over).
  std::uint64_t units_written() const noexcept {
    return units_published + (current ? static_cast<std::uint64_t>(cur - current->units) : 0);
  }
  // Consumer side: all published chunks, oldest first.
  chunk* take_published() noexcept;
  // Consumer side: the oldest published chunk not converted yet (null: none), taken off the list.
  chunk* next_published() noexcept;
  // Consumer side: a chunk back to the worker.
  void give_back(chunk* c) noexcept;
};

}  // namespace grain::instrumentation::trace_detail
