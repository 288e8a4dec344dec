#pragma once
// The running runtime as the other parts of grain see it: workers, pools, statistics,
// knobs, options, start time. Applications use grain::runtime (grain/grain.hpp) instead.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "grain/ext/extension.hpp"
#include "grain/ext/worker_stats.hpp"
#include "grain/knob.hpp"
#include "grain/options.hpp"
#include "grain/topology.hpp"

namespace grain {

namespace detail {
class scheduler;
}

struct pool_info {
  std::string name;
  std::vector<unsigned> workers;  // global worker ids
};

enum class queue_kind { staged, pending };

class runtime_core {
 public:
  // Parses options (compacting argv), configures and starts extensions, starts workers.
  // Throws option_error on bad options; startup_exit when an extension ends start-up.
  runtime_core(int& argc, char** argv, std::vector<std::unique_ptr<extension>> extensions);
  runtime_core(const std::vector<std::string>& args,
               std::vector<std::unique_ptr<extension>> extensions, bool use_environment = true);
  ~runtime_core();  // stop(): extensions stop, workers drain and join
  runtime_core(const runtime_core&) = delete;
  runtime_core& operator=(const runtime_core&) = delete;

  static runtime_core* current() noexcept;  // null when no runtime is running

  // Waits until no task is left, stops extensions (reverse order), stops workers.
  // Idempotent; the destructor calls it.
  void stop();

  unsigned num_workers() const noexcept;
  const std::vector<pool_info>& pools() const noexcept;
  unsigned pool_of(unsigned worker) const noexcept;  // the pool it serves now (pool.<name>.share)
  int pool_index(std::string_view name) const noexcept;  // -1 if unknown
  worker_stats& stats(unsigned worker) noexcept;
  std::size_t queue_length(unsigned worker, queue_kind kind) const noexcept;

  // Elastic pools: active workers of a pool, 1..pools()[p].workers.size().
  unsigned active_workers(unsigned pool) const noexcept;
  void set_active_workers(unsigned pool, unsigned n);

  // The locality (MPI rank) this process is, and how many there are; set by the distributed
  // extension while it configures (0 and 1 without it).
  unsigned locality() const noexcept { return locality_; }
  unsigned num_localities() const noexcept { return num_localities_; }
  void set_locality(unsigned rank, unsigned count) noexcept {
    locality_ = rank;
    num_localities_ = count;
  }
  // Returns when no task is queued, running or suspended (momentarily: a task that arrives
  // later, e.g. from the network, is not waited for).
  void wait_quiescent();
  int bound_pu(unsigned worker) const noexcept;  // OS index of the PU, or -1 if unbound
  const topology& machine() const noexcept;
  const placement& worker_placement() const noexcept;

  const options& opts() const noexcept;
  std::uint64_t start_time_ns() const noexcept;
  std::vector<extension*> extensions() const;

  // Background work runs in the scheduler loop of the given pool when workers look for work
  // (network progress, collectives). Returns true when it did something. Time spent is
  // counted in worker_stats::background_ns.
  int add_background_work(unsigned pool, std::function<bool()> fn);
  void remove_background_work(int id);

  detail::scheduler& scheduler() noexcept { return *sched_; }

 private:
  void start(std::vector<std::unique_ptr<extension>> extensions);
  void undo_start();  // a start that threw: stop what started, in reverse order
  std::unique_ptr<topology> topo_;
  std::vector<pool_info> pool_infos_;
  std::unique_ptr<detail::scheduler> sched_;
  options opts_;
  std::vector<std::unique_ptr<extension>> extensions_;
  std::vector<extension*> started_;
  std::uint64_t start_ns_ = 0;
  unsigned locality_ = 0, num_localities_ = 1;
  bool stopped_ = false;
};

// The options the runtime itself understands (threads, pools, bind, stack-size, log-level).
std::vector<option_spec> core_option_specs();

}  // namespace grain
