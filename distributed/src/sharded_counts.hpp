#pragma once
// Counts that many threads add to without a locked instruction. Each thread adds to a shard of
// its own (grain::stat_counter: a relaxed load and store, it is the shard's only writer) and a
// reader sums the shards. A count that one thread at a time adds to, its writers serialised
// by something else (the received counts), is a stat_counter alone. A locked add costs ~6 ns here,
// and a small parcel's send and receive counted six of them on its path (docs/distributed.md,
// "Cost"). A thread's first add to a given object takes a lock to make its shard; a shard outlives
// its thread, so its counts still count.
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "grain/ext/worker_stats.hpp"

namespace grain::distributed {

// Objects with a serial, so that a thread's cached shard never belongs to a dead object whose
// address was reused.
std::uint64_t next_sharded_counts_serial() noexcept;

template <std::size_t N>
class sharded_counts {
 public:
  sharded_counts() : serial_(next_sharded_counts_serial()) {}
  sharded_counts(const sharded_counts&) = delete;
  sharded_counts& operator=(const sharded_counts&) = delete;

  void add(std::size_t i, std::uint64_t n) { mine().v[i].add(n); }
  // Every count at once (one look-up of this thread's shard).
  void add(const std::array<std::uint64_t, N>& n) {
    shard& s = mine();
    for (std::size_t i = 0; i < N; ++i) s.v[i].add(n[i]);
  }
  std::uint64_t load(std::size_t i) const noexcept {
    std::lock_guard lock(m_);
    std::uint64_t sum = 0;
    for (const shard& s : shards_) sum += s.v[i].get();
    return sum;
  }

 private:
  struct shard {
    std::array<stat_counter, N> v{};  // one writer each: its thread
  };
  struct cached {
    std::uint64_t serial = 0;
    shard* s = nullptr;
  };
  static cached& cache() noexcept {
    thread_local cached c;
    return c;
  }
  shard& mine() {
    cached& c = cache();
    if (c.serial == serial_) [[likely]]
      return *c.s;
    std::lock_guard lock(m_);
    shard*& s = by_thread_[std::this_thread::get_id()];
    if (!s) s = &shards_.emplace_back();
    c = {serial_, s};
    return *s;
  }

  const std::uint64_t serial_;
  mutable std::mutex m_;
  std::deque<shard> shards_;  // stable addresses
  std::unordered_map<std::thread::id, shard*> by_thread_;
};

}  // namespace grain::distributed
