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

// The open regions, innermost last: a plain array that grows out of line, held as pointers
// (its first frame, one past the innermost, one past the last) so that the hooks reach the
// innermost frame and push or pop without turning an index into an address. Below the first
// frame sits a sentinel whose GUID no task and no parent has (a GUID's top four bits are 0:
// spawn_path.hpp's set_ids) and whose region is none: back() of an empty stack is the sentinel,
// so the task path asks "is the innermost frame this task, or this task's parent?" without
// asking first whether there is one.
struct frame_sentinel {
  static constexpr std::uint64_t guid = ~0ull;
  static constexpr std::uint32_t region = ~0u;
  static const frame value;
};
inline const frame frame_sentinel::value{frame_sentinel::guid, frame_sentinel::guid,
                                         frame_sentinel::region};

class frame_stack {
 public:
  bool empty() const noexcept { return top_ == base_; }
  std::size_t size() const noexcept { return static_cast<std::size_t>(top_ - base_); }
  frame* data() noexcept { return base_; }
  frame& operator[](std::size_t i) noexcept { return base_[i]; }
  // The innermost open frame; the sentinel (never written) when none is open.
  frame& back() noexcept { return top_[-1]; }
  const frame& back() const noexcept { return top_[-1]; }
  void push_back(const frame& f) {
    if (top_ == end_) [[unlikely]]
      reserve(a_ ? 2 * capacity() : 64);
    *top_++ = f;
  }
  bool full() const noexcept { return top_ == end_; }
  void push_unchecked(const frame& f) noexcept { *top_++ = f; }
  void pop_back() noexcept { --top_; }
  void clear() noexcept { top_ = base_; }
  [[gnu::noinline]] void reserve(std::size_t cap) {
    if (cap <= capacity()) return;
    auto a = std::make_unique<frame[]>(cap + 1);
    a[0] = frame_sentinel::value;
    const std::size_t n = size();
    for (std::size_t i = 0; i < n; ++i) a[i + 1] = base_[i];
    a_ = std::move(a);
    base_ = a_.get() + 1;
    top_ = base_ + n;
    end_ = base_ + cap;
  }

 private:
  std::size_t capacity() const noexcept { return static_cast<std::size_t>(end_ - base_); }
  std::unique_ptr<frame[]> a_;  // the sentinel, then the frames
  // Before the first push: empty and full, just above a shared sentinel that is only read.
  frame* base_ = const_cast<frame*>(&frame_sentinel::value) + 1;
  frame* top_ = base_;
  frame* end_ = base_;
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
