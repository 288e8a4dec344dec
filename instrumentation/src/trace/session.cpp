// The trace session's lifecycle: the directory checks at construction, start (back end,
// hooks, listeners), and stop or emergency stop (listeners off, the hand-over, the back end
// writes everything). What happens in between lives in the files it wires together:
// session_hooks.cpp and recorder.hpp (the task path), session_listeners.cpp (counters and
// decisions), handover.cpp (the barrier at stop), and the back ends.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <optional>
#include <system_error>

#include "convert_pacing.hpp"
#include "grain/clock.hpp"
#include "grain/instrumentation/trace_group.hpp"
#include "grain/options.hpp"
#include "handover.hpp"
#include "message_sink.hpp"
#include "session_core.hpp"
#include "session_hooks.hpp"
#include "session_listeners.hpp"
#include "trace_directory.hpp"

namespace grain::instrumentation {

using namespace trace_detail;
namespace fs = std::filesystem;

namespace {

std::uint64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

}  // namespace

const char* trace_file_name(trace_format f) noexcept {
  switch (f) {
    case trace_format::perfetto:
      return "trace.pftrace";
    case trace_format::chrome:
      return "trace.json";
    case trace_format::chrome_gz:
      return "trace.json.gz";
    case trace_format::otf2:
      break;
  }
  return "traces.otf2";
}

struct trace_session::impl {
  session_core core;
  session_listeners listeners;
  std::mutex stop_mutex;
  trace_directory directory;
  bool started = false;
  bool stopped = false;
  trace_stats result;

  void finish(bool emergency);
  // Nothing was recorded: close the writers, give the directory back as it was.
  void discard() noexcept;
};

trace_session::trace_session(trace_config cfg) : impl_(std::make_unique<impl>()) {
  try {
    open(std::move(cfg));
  } catch (...) {
    impl_->discard();  // a directory made for a session that did not come to be goes again
    throw;
  }
}

void trace_session::open(trace_config cfg) {
  session_core& s = impl_->core;
  if (cfg.dir.empty()) throw option_error("--grain:trace: give a directory (--grain:trace=DIR)");
  if (cfg.workers == 0) cfg.workers = 1;
  if (cfg.workers > max_workers)
    throw option_error("--grain:trace: at most " + std::to_string(max_workers) +
                       " workers can be traced");
  const fs::path dir(cfg.dir);
  // Several processes write one trace: rank 0 checks and creates the directory and tells the
  // others what it found, so that all of them go on or all stop with the same message.
  trace_group* group = current_trace_group();
  if (group && group->size() > 1) {
    std::string error;
    if (group->rank() == 0) {
      try {
        impl_->directory.prepare(cfg, false);
      } catch (const option_error& e) {
        error = e.what();
      }
    }
    std::uint64_t n = error.size();
    group->broadcast(&n, sizeof n, 0);
    error.resize(n);
    if (n) group->broadcast(error.data(), n, 0);
    if (n) throw option_error(error);
    s.group = group;
  } else {
    impl_->directory.prepare(cfg, true);
  }
  for (auto& p : cfg.counter_patterns) {
    try {
      s.patterns.emplace_back(p);
    } catch (const std::invalid_argument& e) {
      throw option_error("--grain:trace-counters=" + p + ": " + e.what());
    }
  }
  s.cfg = std::move(cfg);
  // OTF2: one archive for every rank. Perfetto and Chrome: one file per rank (trace.rankR.*).
  std::string file = trace_file_name(s.cfg.format);
  if (s.group && s.cfg.format != trace_format::otf2)
    file.insert(std::string("trace").size(), ".rank" + std::to_string(s.group->rank()));
  s.path = (dir / file).string();
  s.workers = std::vector<worker_buf>(s.cfg.workers);
  s.worker_bufs = s.workers.data();
  s.worker_count = s.workers.size();
  s.spare_cores = cores_to_spare(s.workers.size());
  s.backlog_chunks = worker_backlog_chunks(s.workers.size());
  for (auto& b : s.workers) b.stack.reserve(64);
  switch (s.cfg.format) {
    case trace_format::otf2:
      s.be = make_otf2_backend(s);
      break;
    case trace_format::perfetto:
      s.be = make_perfetto_backend(s);
      break;
    case trace_format::chrome:
    case trace_format::chrome_gz:
      s.be = make_chrome_backend(s, s.cfg.format == trace_format::chrome_gz);
      break;
  }
}

trace_session::~trace_session() {
  try {
    stop();
  } catch (...) {
  }
  if (!impl_->started) impl_->discard();  // made, never started: the run was refused
}

void trace_session::impl::discard() noexcept {
  core.be.reset();  // closes what the writer opened, so that its files can go
  // Several processes write one directory: the others may be recording into it.
  if (!core.group) directory.abandon();
}

void trace_session::abandon() noexcept {
  impl& I = *impl_;
  {
    std::lock_guard lk(I.stop_mutex);
    if (I.started && !I.stopped) {
      I.stopped = true;
      try {
        I.finish(false);  // the hooks and listeners go; what was written is deleted next
      } catch (...) {
      }
    }
    I.started = true;  // the destructor has nothing left to do
    I.stopped = true;
  }
  I.discard();
}

bool trace_session::recording() const noexcept {
  return impl_->started && !impl_->stopped;
}

void trace_session::start() {
  impl& I = *impl_;
  session_core& s = I.core;
  std::lock_guard lk(I.stop_mutex);
  if (I.started) return;
  s.start_ns = now_ns();
  s.realtime_at_start = realtime_ns() - (now_ns() - s.start_ns);
  s.aux_last_ts = s.start_ns;
  for (auto& b : s.workers) b.last_ts = s.start_ns;
  s.be->open_workers(s);
  attach_hooks(s);
  I.listeners.start(s);
  attach_message_sink(s);
  I.started = true;
}

void trace_session::impl::finish(bool emergency) {
  session_core& s = core;
  s.emergency = emergency;
  detach_message_sink(s);
  listeners.stop(s, emergency);
  detach_hooks(s, emergency);

  std::uint64_t t_end = now_ns();
  {
    std::lock_guard al(s.aux_mutex);
    t_end = std::max(t_end, s.aux_last_ts);
    for (auto& b : s.workers) t_end = std::max(t_end, b.last_ts);
    result = {};
    result.path = s.path;
    result.counter_samples = s.samples;
    result.decisions = s.decisions;
    for (auto& b : s.workers) {
      result.buffer_bytes += b.out.units_written() * sizeof(unit);
      result.task_enters += b.enters;
      result.reentries += b.reentries;
    }
    s.be->finalize(s, t_end, result);
    for (auto& b : s.workers) result.worker_events += b.events;
  }
}

namespace {
std::mutex g_last_mutex;
std::optional<trace_stats> g_last;
}  // namespace

std::optional<trace_stats> last_trace_stats() {
  std::lock_guard lk(g_last_mutex);
  return g_last;
}

trace_stats trace_session::stop() {
  impl& I = *impl_;
  std::lock_guard lk(I.stop_mutex);
  if (!I.started || I.stopped) return I.result;
  I.stopped = true;
  I.finish(false);
  I.directory.commit();  // this run's trace is written: the one it replaces goes for good
  {
    std::lock_guard ll(g_last_mutex);
    g_last = I.result;
  }
  if (!I.result.complete) return I.result;  // the back end said why, once
  if (I.result.errors)
    spdlog::warn("grain: trace {}: {} records could not be written", I.result.path,
                 I.result.errors);
  spdlog::info("grain: trace written to {} ({} task phases, {} bytes of events)", I.result.path,
               I.result.task_enters, I.result.bytes);
  return I.result;
}

void trace_session::emergency_stop() {
  impl& I = *impl_;
  std::unique_lock lk(I.stop_mutex, std::try_to_lock);
  if (!lk.owns_lock() || !I.started || I.stopped) return;
  I.stopped = true;
  I.finish(true);
  I.directory.commit();
  if (I.result.complete)
    std::fprintf(stderr, "grain: trace written to %s before exiting\n", I.result.path.c_str());
}

}  // namespace grain::instrumentation
