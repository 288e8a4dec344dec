#pragma once
// The /threads counters (docs/counters.md, "/threads counters"): computed from the per-worker
// statistics the scheduler keeps (grain/ext/worker_stats.hpp). Nothing here runs per task: a sample
// reads each worker's slots once and derives every counter of every instance from those readings.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "grain/ext/runtime_core.hpp"
#include "grain/ext/worker_stats.hpp"
#include "grain/instrumentation/counters.hpp"

namespace grain::instrumentation {

// Where the statistics come from: the running runtime, or a fake in unit tests.
class stats_source {
 public:
  virtual ~stats_source() = default;
  virtual unsigned locality() const { return 0; }
  virtual unsigned num_workers() const = 0;
  virtual const std::vector<pool_info>& pools() const = 0;
  virtual const worker_stats& stats(unsigned worker) const = 0;
  virtual std::size_t queue_length(unsigned worker, queue_kind kind) const = 0;
  virtual unsigned active_workers(unsigned pool) const = 0;
};

// Reads a runtime_core (which must outlive the source).
std::unique_ptr<stats_source> make_stats_source(runtime_core& rt);

struct threads_options {
  // t_d1: average task duration of this application on one worker, in ns (docs/counters.md, Eq. 5).
  // Without it the wait-time-inflation counters report unavailable.
  std::optional<double> t_d1_ns;
};

// Every /threads counter for every worker, pool and the locality. The source must outlive
// the provider.
std::shared_ptr<counter_provider> make_threads_provider(const stats_source& src,
                                                        threads_options opts = {});

// The Grubel et al. 2015 metrics over one interval, from summed raw statistics (exposed for tests
// and for docs/counters.md to point at one place).
struct raw_totals {
  std::uint64_t tasks = 0, inline_tasks = 0, phases = 0, exec_ns = 0, func_ns = 0, idle_ns = 0,
                background_ns = 0, pending_accesses = 0, pending_misses = 0, staged_accesses = 0,
                staged_misses = 0, stolen_from = 0, stolen_to = 0, heavy_steals = 0,
                staged_wait_ns = 0, staged_wait_count = 0, pending_wait_ns = 0,
                pending_wait_count = 0, suspensions = 0;
};

// Reads one worker's slots; the periods in progress at `now` are added: an idle period to
// func_ns and idle_ns (worker_stats::idle_since_ns), a task phase to func_ns and exec_ns
// (worker_stats::phase_since_ns).
raw_totals read_worker(const worker_stats& s, std::uint64_t now) noexcept;

}  // namespace grain::instrumentation
