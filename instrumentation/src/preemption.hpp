#pragma once
// Preemption of the workers as the kernel sees it (docs/counters.md, "Preemption"): each worker's
// run delay — time runnable but waiting for a CPU — from /proc/self/task/TID/schedstat, and its
// involuntary context switches from /proc/self/task/TID/status. Read by the sampler thread for
// the /threads counters, never on the task path.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace grain::instrumentation::detail {

// One worker's kernel statistics at one moment, or their difference over an interval.
struct sched_totals {
  std::uint64_t run_delay_ns = 0;  // schedstat, second field
  std::uint64_t involuntary = 0;   // status, nonvoluntary_ctxt_switches
  bool delay_ok = false;           // run_delay_ns was read
  bool switches_ok = false;        // involuntary was read
};
sched_totals minus(const sched_totals& a, const sched_totals& b) noexcept;
// Sums b into a; a stays available only while every part was.
void accumulate(sched_totals& a, const sched_totals& b) noexcept;

// Where the sampler learns each worker's OS thread: the runtime records gettid() when a worker
// starts (a worker_start hook); a test's source may give threads of its own. A stats_source that
// also implements this has /threads/time/preempted and /threads/count/involuntary-switches.
class worker_threads {
 public:
  virtual ~worker_threads() = default;
  // The worker's OS thread id (gettid()), 0 while it is not known (not started yet).
  virtual pid_t os_thread(unsigned worker) const = 0;
  // The directory holding one directory per thread of this process (a seam for tests).
  virtual std::string task_dir() const { return "/proc/self/task"; }
  // The thread's figures when the worker started, the base of a worker that had not started
  // at the last reset (a new thread waits for a CPU before it enters the scheduling loop, and
  // that wait is not in its Σt_func); nothing read (false flags): count from the thread's start.
  virtual sched_totals at_start(unsigned /*worker*/) const { return {}; }
};

// Reads <task_dir>/<tid>/schedstat and .../status. Keeps each file open per slot (a worker) and
// re-reads it from offset 0, so a sample pays one pread() of schedstat per worker, and one of
// status when the thread went through the scheduler since (not open and close).
class sched_reader {
 public:
  // Checks on the calling thread that both files exist and hold what is expected; the reasons
  // say why not (a kernel without per-thread scheduler statistics, /proc not mounted).
  sched_reader(std::string task_dir, unsigned slots);
  ~sched_reader();
  sched_reader(const sched_reader&) = delete;
  sched_reader& operator=(const sched_reader&) = delete;

  // Empty when available, else why the run delay / the switch count cannot be read here.
  const std::string& delay_unavailable() const noexcept { return delay_why_; }
  const std::string& switches_unavailable() const noexcept { return switches_why_; }

  // Thread `tid` in slot `slot`; tid 0 (not started) reads as unavailable. No allocation.
  sched_totals read(unsigned slot, pid_t tid) noexcept;

  // The calling thread's id (gettid()).
  static pid_t this_thread() noexcept;

 private:
  struct slot_files {
    pid_t tid = 0;
    int schedstat = -1, status = -1;
    // The last reading: status is read again only when schedstat moved.
    std::uint64_t timeslices = 0, run_delay_ns = 0, involuntary = 0;
    bool switches_ok = false;
  };
  int open_file(pid_t tid, const char* name) const noexcept;
  std::string task_dir_;
  std::string delay_why_, switches_why_;
  std::vector<slot_files> slots_;
};

// Parsers of the two files' contents (exposed for tests): false when the text is not as
// expected.
// schedstat's run delay, and its third field (arrivals on a CPU) when `timeslices` is given.
bool parse_run_delay(const char* text, std::size_t n, std::uint64_t& run_delay_ns,
                     std::uint64_t* timeslices = nullptr) noexcept;
bool parse_involuntary(const char* text, std::size_t n, std::uint64_t& switches) noexcept;

// The OS thread ids of a runtime's workers, recorded by a worker_start hook (chained with any
// other tool's). One recorder at a time per process, as there is one runtime at a time; it must
// be constructed before the workers start and outlive them.
class worker_tid_recorder {
 public:
  explicit worker_tid_recorder(unsigned workers);
  ~worker_tid_recorder();
  worker_tid_recorder(const worker_tid_recorder&) = delete;
  worker_tid_recorder& operator=(const worker_tid_recorder&) = delete;
  pid_t os_thread(unsigned worker) const noexcept;
  sched_totals at_start(unsigned worker) const noexcept;
  // On the worker's thread, once: its id, and its run delay and switches so far.
  void record(unsigned worker) noexcept;

 private:
  struct impl;
  impl* impl_;
};

}  // namespace grain::instrumentation::detail
