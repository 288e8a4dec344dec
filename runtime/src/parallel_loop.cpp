// The non-template half of the parallel loops: how many workers a loop may use, the auto and
// adaptive chunk rules, and the statistics behind the /loops counters.
#include <algorithm>
#include <atomic>

#include "grain/detail/task_overhead.hpp"
#include "grain/ext/runtime_core.hpp"
#include "grain/knob.hpp"
#include "grain/parallel/loop_engine.hpp"
#include "grain/parallel/loop_stats.hpp"
#include "grain/this_task.hpp"

namespace grain {

loop_stats& loop_statistics() noexcept {
  static loop_stats s;
  return s;
}

namespace detail {

// loop.lambda is defined by the runtime when it starts (adaptive inlining's configure); a knob
// never goes away, so the pointer is cached after the first lookup.
const knob& loop_lambda_knob() {
  static std::atomic<knob*> cached{nullptr};
  knob* k = cached.load(std::memory_order_acquire);
  if (!k) {
    k = &knobs().define_double("loop.lambda", 0, 1000, 10,
                               "adaptive chunking: chunk time >= lambda x t_o (overhead per "
                               "chunk <= 1/lambda)");
    cached.store(k, std::memory_order_release);
  }
  return *k;
}

double loop_overhead_ns() noexcept {
  return task_overhead_ns();
}

unsigned loop_workers() noexcept {
  runtime_core* rt = runtime_core::current();
  const int w = this_task::worker_index();
  if (!rt || w < 0) return 1;
  return rt->active_workers(rt->pool_of(static_cast<unsigned>(w)));
}

unsigned loop_max_runners() {
  runtime_core* rt = runtime_core::current();
  if (!rt) throw_no_runtime();
  return std::max(1u, rt->num_workers());
}

double adaptive_target_ns(double lambda) {
  const double l = lambda >= 0 ? lambda : loop_lambda_knob().value();
  return l * task_overhead_ns();
}

std::size_t auto_chunk(std::uint64_t elapsed_ns, std::size_t timed, std::size_t remaining,
                       unsigned workers, std::uint64_t target_ns) noexcept {
  if (remaining == 0) return 1;
  const std::size_t cap = ceil_div(remaining, std::max(1u, workers));
  // Nothing timed (a loop under 100 iterations) or faster than the clock: HPX's fallback, one
  // even share per worker.
  if (timed == 0 || elapsed_ns == 0) return cap;
  const double t_iter = static_cast<double>(elapsed_ns) / static_cast<double>(timed);
  const double c = static_cast<double>(target_ns) / t_iter;
  if (c >= static_cast<double>(cap)) return cap;
  return std::max<std::size_t>(1, static_cast<std::size_t>(c));
}

void record_loop(execution::chunk_kind kind, std::size_t n, std::uint64_t chunks,
                 std::size_t chunk_size) noexcept {
  loop_stats& s = loop_statistics();
  s.calls.fetch_add(1, std::memory_order_relaxed);
  s.iterations.fetch_add(n, std::memory_order_relaxed);
  s.chunks.fetch_add(chunks, std::memory_order_relaxed);
  s.last_chunk_size.store(chunk_size, std::memory_order_relaxed);
  s.last_kind.store(static_cast<std::uint8_t>(kind), std::memory_order_relaxed);
}

}  // namespace detail
}  // namespace grain
