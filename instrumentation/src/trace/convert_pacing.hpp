#pragma once
// When the converter thread turns the workers' chunks into the trace format while the program
// runs. Converting costs several times what recording does (OTF2: ~600 instructions per task
// against ~250), so a converter that takes a core from a busy worker makes tracing cost what
// conversion costs. It therefore converts only when a core is spare: fewer workers than CPUs,
// or a worker idle (then its core has nothing better to do); otherwise the chunks wait, until
// the stop converts them or a worker's backlog reaches its share of the buffer budget (then the
// converter runs regardless, so that memory stays bounded however long the run).
// docs/tracing.md, "How it is recorded (cost)".
#include <sched.h>

#include <algorithm>
#include <cstdint>

#include "session_core.hpp"

namespace grain::instrumentation::trace_detail {

// What the workers' records may hold before the converter runs regardless: 256 MiB in all, at
// least 16 MiB per worker (in 256 KiB chunks).
inline constexpr std::uint64_t buffer_budget_bytes = std::uint64_t{256} << 20;
inline constexpr std::uint64_t min_worker_buffer_bytes = std::uint64_t{16} << 20;

inline std::uint32_t worker_backlog_chunks(std::size_t workers) noexcept {
  const std::uint64_t per_worker =
      std::max(min_worker_buffer_bytes, buffer_budget_bytes / std::max<std::size_t>(workers, 1));
  return static_cast<std::uint32_t>(per_worker / sizeof(chunk));
}

// True when the process may run on more CPUs than there are workers.
inline bool cores_to_spare(std::size_t workers) noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return false;
  return static_cast<std::size_t>(CPU_COUNT(&set)) > workers;
}

// Whether to convert worker b's next published chunk now (the converter thread's question).
inline bool convert_now(const session_core& s, const worker_buf& b) noexcept {
  if (s.spare_cores) return true;
  if (b.out.unconverted.load(std::memory_order_relaxed) >= s.backlog_chunks) return true;
  return std::any_of(s.workers.begin(), s.workers.end(),
                     [](const worker_buf& o) { return o.idle.load(std::memory_order_relaxed); });
}

// Converts what convert_now allows (all: everything published, at stop): convert_chunk(w, c)
// for each chunk in order, then the chunk goes back to its worker. True if it converted any.
template <class F>
bool drain_published(session_core& s, bool all, F&& convert_chunk) {
  bool did = false;
  for (unsigned w = 0; w < s.workers.size(); ++w) {
    worker_buf& b = s.workers[w];
    while (all || convert_now(s, b)) {
      chunk* c = b.out.next_published();
      if (!c) break;
      convert_chunk(w, c);
      b.out.give_back(c);
      did = true;
    }
  }
  return did;
}

}  // namespace grain::instrumentation::trace_detail
