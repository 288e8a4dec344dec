// Serials of sharded_counts objects (sharded_counts.hpp).
#include "sharded_counts.hpp"

namespace grain::distributed {

std::uint64_t next_sharded_counts_serial() noexcept {
  static std::atomic<std::uint64_t> next{1};  // 0: a thread's empty cache
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace grain::distributed
