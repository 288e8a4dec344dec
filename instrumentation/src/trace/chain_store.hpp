#pragma once
// Ancestors (inline parents) that were open under a task when it suspended (an empty list when
// there were none); they are entered again on the worker that resumes it. Shared between workers (a
// task resumes anywhere), so it is the recorder's one locked structure; a counting filter keeps the
// lock off the task path for the tasks that never suspended under an inline parent.
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "record.hpp"

namespace grain::instrumentation::trace_detail {

class chain_store {
 public:
  bool maybe(std::uint64_t guid) const noexcept {
    return saved_.load(std::memory_order_relaxed) != 0 &&
           filter_[slot(guid)].load(std::memory_order_relaxed) != 0;
  }
  void save(std::uint64_t guid, const frame* first, std::size_t n);
  bool take(std::uint64_t guid, std::vector<frame>& out);

 private:
  static std::size_t slot(std::uint64_t g) noexcept {
    return static_cast<std::size_t>(((g ^ (g >> 29)) * 0x9E3779B97F4A7C15ull) >> 52);
  }
  // Chains held: none (no task suspended under the trace, as in fib) spares the task path the
  // filter's hash. Ordered like the filter: by the runtime's hand-over of the suspended task.
  std::atomic<std::uint32_t> saved_{0};
  std::array<std::atomic<std::uint32_t>, 4096> filter_{};
  std::mutex m_;
  std::unordered_map<std::uint64_t, std::vector<frame>> map_;
};

}  // namespace grain::instrumentation::trace_detail
