// Per-thread run delay and involuntary context switches from /proc (docs/counters.md,
// "Preemption"). The kernel writes /proc/PID/task/TID/schedstat as "on-CPU-ns run-delay-ns
// timeslices" (all three 0 when it keeps no such statistics: sched_info off) and status with a
// "nonvoluntary_ctxt_switches:" line. getrusage(RUSAGE_THREAD) has the same switch count but only
// for the calling thread; the sampler reads other threads, so it reads /proc.
#include "preemption.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string_view>
#include <thread>

#include "grain/ext/hooks.hpp"

namespace grain::instrumentation::detail {

namespace {

constexpr std::size_t status_buffer = 4096;  // status is ~1.4 KB on Linux 6

inline std::uint64_t sat_sub(std::uint64_t a, std::uint64_t b) noexcept {
  return a > b ? a - b : 0;
}

// Reads the whole (small) file from offset 0 into buf; the length, or -1.
long read_all(int fd, char* buf, std::size_t cap) noexcept {
  std::size_t n = 0;
  while (n < cap) {
    const ssize_t r = pread(fd, buf + n, cap - n, static_cast<off_t>(n));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) break;
    n += static_cast<std::size_t>(r);
  }
  return static_cast<long>(n);
}

const char* skip_spaces(const char* p, const char* end) noexcept {
  while (p < end && (*p == ' ' || *p == '\t')) ++p;
  return p;
}

std::string errno_text(int e) {
  return std::strerror(e);
}

}  // namespace

// A baseline that was not read is a thread that had not started at the reset: its whole life
// is in the interval, so it counts from 0.
sched_totals minus(const sched_totals& a, const sched_totals& b) noexcept {
  sched_totals d = a;
  if (b.delay_ok) d.run_delay_ns = sat_sub(a.run_delay_ns, b.run_delay_ns);
  if (b.switches_ok) d.involuntary = sat_sub(a.involuntary, b.involuntary);
  return d;
}

void accumulate(sched_totals& a, const sched_totals& b) noexcept {
  a.run_delay_ns += b.run_delay_ns;
  a.involuntary += b.involuntary;
  a.delay_ok = a.delay_ok && b.delay_ok;
  a.switches_ok = a.switches_ok && b.switches_ok;
}

bool parse_run_delay(const char* text, std::size_t n, std::uint64_t& run_delay_ns,
                     std::uint64_t* timeslices) noexcept {
  const char* p = text;
  const char* end = text + n;
  std::uint64_t on_cpu = 0;
  auto r = std::from_chars(p, end, on_cpu);
  if (r.ec != std::errc()) return false;
  p = skip_spaces(r.ptr, end);
  r = std::from_chars(p, end, run_delay_ns);
  if (r.ec != std::errc() || r.ptr == p) return false;
  if (timeslices) {
    p = skip_spaces(r.ptr, end);
    if (std::from_chars(p, end, *timeslices).ec != std::errc()) *timeslices = 0;
  }
  return true;
}

bool parse_involuntary(const char* text, std::size_t n, std::uint64_t& switches) noexcept {
  constexpr std::string_view key = "\nnonvoluntary_ctxt_switches:";
  const std::string_view all(text, n);
  const auto at = all.find(key);
  if (at == std::string_view::npos) return false;
  const char* end = text + n;
  const char* p = skip_spaces(text + at + key.size(), end);
  const auto r = std::from_chars(p, end, switches);
  return r.ec == std::errc() && r.ptr != p;
}

pid_t sched_reader::this_thread() noexcept {
  return static_cast<pid_t>(syscall(SYS_gettid));
}

int sched_reader::open_file(pid_t tid, const char* name) const noexcept {
  char path[512];
  const int len =
      std::snprintf(path, sizeof path, "%s/%d/%s", task_dir_.c_str(), static_cast<int>(tid), name);
  if (len < 0 || static_cast<std::size_t>(len) >= sizeof path) return -1;
  return ::open(path, O_RDONLY | O_CLOEXEC);
}

sched_reader::sched_reader(std::string task_dir, unsigned slots)
    : task_dir_(std::move(task_dir)), slots_(slots) {
  // The probe: this thread's own files, which exist whenever the kernel offers them.
  const pid_t self = this_thread();
  const std::string where = task_dir_ + "/" + std::to_string(self) + "/";
  char buf[status_buffer];
  int fd = open_file(self, "schedstat");
  if (fd < 0) {
    delay_why_ = "cannot read " + where + "schedstat (" + errno_text(errno) +
                 "): the kernel keeps no per-thread scheduler statistics (built without "
                 "CONFIG_SCHED_INFO) or /proc is not mounted";
  } else {
    std::uint64_t delay = 0, timeslices = 0;
    for (int attempt = 0; attempt < 2; ++attempt) {
      const long n = read_all(fd, buf, sizeof buf);
      if (n <= 0 || !parse_run_delay(buf, static_cast<std::size_t>(n), delay, &timeslices)) {
        delay_why_ = where + "schedstat does not hold 'on-cpu-ns run-delay-ns timeslices'";
        break;
      }
      // The kernel writes "0 0 0" when it keeps no run delays; a thread that has not yet been
      // switched out may read so too, so ask again after one switch (a 0.1 ms sleep).
      if (timeslices != 0 || delay != 0) break;
      if (attempt == 1)
        delay_why_ = where +
                     "schedstat reads 0 0 0: the kernel does not keep run delays (no "
                     "CONFIG_SCHEDSTATS, and task delay accounting is off: boot with delayacct)";
      else
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    ::close(fd);
  }
  fd = open_file(self, "status");
  if (fd < 0) {
    switches_why_ =
        "cannot read " + where + "status (" + errno_text(errno) + "): /proc is not mounted";
  } else {
    const long n = read_all(fd, buf, sizeof buf);
    std::uint64_t sw = 0;
    if (n <= 0 || !parse_involuntary(buf, static_cast<std::size_t>(n), sw))
      switches_why_ = where + "status has no nonvoluntary_ctxt_switches line";
    ::close(fd);
  }
}

sched_reader::~sched_reader() {
  for (auto& s : slots_) {
    if (s.schedstat >= 0) ::close(s.schedstat);
    if (s.status >= 0) ::close(s.status);
  }
}

sched_totals sched_reader::read(unsigned slot, pid_t tid) noexcept {
  sched_totals t;
  if (tid == 0 || slot >= slots_.size()) return t;
  slot_files& f = slots_[slot];
  if (f.tid != tid) {  // first read of this thread: open its two files once
    if (f.schedstat >= 0) ::close(f.schedstat);
    if (f.status >= 0) ::close(f.status);
    f.schedstat = delay_why_.empty() ? open_file(tid, "schedstat") : -1;
    f.status = switches_why_.empty() ? open_file(tid, "status") : -1;
    f.tid = tid;
    f.switches_ok = false;
  }
  char buf[status_buffer];
  std::uint64_t timeslices = 0;
  if (f.schedstat >= 0) {
    const long n = read_all(f.schedstat, buf, 128);
    t.delay_ok =
        n > 0 && parse_run_delay(buf, static_cast<std::size_t>(n), t.run_delay_ns, &timeslices);
  }
  // status costs ~10x schedstat (the kernel formats ~60 lines): read it only when the thread
  // came back to a CPU since the last read (schedstat's arrivals or run delay changed). An
  // involuntary switch is counted when the thread leaves the CPU; until it returns the count
  // here can lag by that one switch.
  const bool moved = !t.delay_ok || !f.switches_ok || timeslices != f.timeslices ||
                     t.run_delay_ns != f.run_delay_ns;
  if (f.status >= 0 && moved) {
    const long n = read_all(f.status, buf, sizeof buf);
    f.switches_ok = n > 0 && parse_involuntary(buf, static_cast<std::size_t>(n), f.involuntary);
  }
  f.timeslices = timeslices;
  f.run_delay_ns = t.run_delay_ns;
  t.involuntary = f.involuntary;
  t.switches_ok = f.status >= 0 && f.switches_ok;
  return t;
}

// ---- The worker_start hook that records each worker's thread id ----

struct worker_tid_recorder::impl {
  explicit impl(unsigned n)
      : tids(std::make_unique<std::atomic<pid_t>[]>(n)),
        start(std::make_unique<sched_totals[]>(n)),
        n(n) {}
  std::unique_ptr<std::atomic<pid_t>[]> tids;
  std::unique_ptr<sched_totals[]> start;  // written before tids[w] is published
  unsigned n;
};

namespace {

std::atomic<worker_tid_recorder*> g_recorder{nullptr};

void hook_worker_start(unsigned w);

hook_chain g_chain{runtime_hooks{.worker_start = &hook_worker_start}};

void hook_worker_start(unsigned w) {
  if (auto p = g_chain.prev(&runtime_hooks::worker_start)) p(w);
  if (auto* r = g_recorder.load(std::memory_order_acquire)) r->record(w);
}

}  // namespace

worker_tid_recorder::worker_tid_recorder(unsigned workers) : impl_(new impl(workers)) {
  for (unsigned w = 0; w < workers; ++w) impl_->tids[w].store(0, std::memory_order_relaxed);
  g_recorder.store(this, std::memory_order_release);
  g_chain.install();
}

worker_tid_recorder::~worker_tid_recorder() {
  worker_tid_recorder* expected = this;
  // The runtime joined its workers before its extensions go: no hook runs now.
  if (g_recorder.compare_exchange_strong(expected, nullptr)) g_chain.uninstall();
  delete impl_;
}

pid_t worker_tid_recorder::os_thread(unsigned worker) const noexcept {
  return worker < impl_->n ? impl_->tids[worker].load(std::memory_order_acquire) : 0;
}

sched_totals worker_tid_recorder::at_start(unsigned worker) const noexcept {
  if (os_thread(worker) == 0) return {};
  return impl_->start[worker];
}

void worker_tid_recorder::record(unsigned worker) noexcept {
  if (worker >= impl_->n) return;
  // Once per worker, before its first task: its own figures so far (the wait between the
  // thread's creation and this point is not the scheduling loop's). getrusage gives the
  // calling thread's involuntary switches without /proc.
  sched_totals& t = impl_->start[worker];
  const int fd = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    char buf[128];
    const long n = read_all(fd, buf, sizeof buf);
    t.delay_ok = n > 0 && parse_run_delay(buf, static_cast<std::size_t>(n), t.run_delay_ns);
    ::close(fd);
  }
  rusage ru{};
  if (getrusage(RUSAGE_THREAD, &ru) == 0) {
    t.involuntary = static_cast<std::uint64_t>(ru.ru_nivcsw);
    t.switches_ok = true;
  }
  impl_->tids[worker].store(sched_reader::this_thread(), std::memory_order_release);
}

}  // namespace grain::instrumentation::detail
