#pragma once
// What the recording keeps per worker: its open regions, its cache of region ids, its counts
// and its chunk buffer. Only that worker touches it while the session records; the back end
// takes it over at stop (handover.hpp).
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "chunk_buffer.hpp"
#include "record.hpp"

namespace grain::instrumentation::trace_detail {

// The open regions, innermost last: a plain array that grows out of line, so that a push on
// the task path is a compare and three stores.
class frame_stack {
 public:
  bool empty() const noexcept { return n_ == 0; }
  std::size_t size() const noexcept { return n_; }
  frame* data() noexcept { return a_.get(); }
  frame& operator[](std::size_t i) noexcept { return a_[i]; }
  frame& back() noexcept { return a_[n_ - 1]; }
  const frame& back() const noexcept { return a_[n_ - 1]; }
  void push_back(const frame& f) {
    if (n_ == cap_) [[unlikely]]
      reserve(cap_ ? 2 * cap_ : 64);
    a_[n_++] = f;
  }
  bool full() const noexcept { return n_ == cap_; }
  void push_unchecked(const frame& f) noexcept { a_[n_++] = f; }
  void pop_back() noexcept { --n_; }
  void clear() noexcept { n_ = 0; }
  [[gnu::noinline]] void reserve(std::size_t cap) {
    if (cap <= cap_) return;
    auto a = std::make_unique<frame[]>(cap);
    for (std::size_t i = 0; i < n_; ++i) a[i] = a_[i];
    a_ = std::move(a);
    cap_ = cap;
  }

 private:
  std::unique_ptr<frame[]> a_;
  std::size_t n_ = 0;
  std::size_t cap_ = 0;
};

// Its size a power of two (8 KiB: the name cache is 4), so that the hooks find a worker's buffer
// with a shift instead of a multiply, which every access on the task path waits for.
struct alignas(8192) worker_buf {
  struct cache_entry {
    const char* key = nullptr;
    std::uint32_t region = 0;
  };
  // The last task name and its region: a run of tasks of one kind skips the table. Never
  // null (no task's name is no_name), so that a null name always takes the table's path.
  static constexpr char no_name[] = "";
  const char* last_name = no_name;
  std::uint32_t last_region = 0;
  std::uint64_t last_ts = 0;  // of the last record: the base of the next one's delta
  chunk_buffer out;
  frame_stack stack;
  std::uint64_t enters = 0;
  std::uint64_t reentries = 0;
  std::uint64_t events = 0;
  static constexpr unsigned cache_size = 256;  // power of two
  unsigned cache_used = 0;
  std::array<cache_entry, cache_size> cache{};
  // Between idle_begin and idle_end: the converter may take this worker's core
  // (convert_pacing.hpp). On a line of its own: the converter polls it.
  alignas(64) std::atomic<bool> idle{false};
  // The consumer's (converter, then stop): turns this worker's chunks back into events, in order.
  alignas(64) record_decoder decoder;
};
static_assert(sizeof(worker_buf) == 8192);

}  // namespace grain::instrumentation::trace_detail
