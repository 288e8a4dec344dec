#pragma once
// What the parallel loops did, process-wide. The runtime writes these once per loop call and
// once per worker share (never per iteration or per chunk); the /loops counters of the
// instrumentation part read them (docs/counters.md). Sequential (seq) loops are not counted.
#include <atomic>
#include <cstdint>

namespace grain {

struct loop_stats {
  std::atomic<std::uint64_t> calls{0};       // parallel loop calls
  std::atomic<std::uint64_t> iterations{0};  // their iterations
  std::atomic<std::uint64_t> chunks{0};      // chunks executed (auto timing, adaptive start: 1)
  // The chunk size the chunker chose in the most recently finished call (see
  // docs/parallel-loops.md: for guided its first chunk, for adaptive the size its rule reached).
  std::atomic<std::uint64_t> last_chunk_size{0};
  // The kind of that chunker (execution::chunk_kind as a number).
  std::atomic<std::uint8_t> last_kind{0};
};

loop_stats& loop_statistics() noexcept;

}  // namespace grain
