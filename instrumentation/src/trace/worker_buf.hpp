#pragma once
// What the recording keeps per worker: its open regions, its cache of region ids, its counts
// and its chunk buffer. Only that worker touches it while the session records; the back end
// takes it over at stop (handover.hpp).
#include <array>
#include <cstdint>
#include <vector>

#include "chunk_buffer.hpp"
#include "record.hpp"

namespace grain::instrumentation::trace_detail {

struct alignas(64) worker_buf {
  struct cache_entry {
    const char* key = nullptr;
    std::uint32_t region = 0;
  };
  static constexpr unsigned cache_size = 256;  // power of two
  std::array<cache_entry, cache_size> cache{};
  unsigned cache_used = 0;
  std::vector<frame> stack;
  std::uint64_t last_ts = 0;
  std::uint64_t enters = 0;
  std::uint64_t reentries = 0;
  std::uint64_t events = 0;
  chunk_buffer out;
};

}  // namespace grain::instrumentation::trace_detail
