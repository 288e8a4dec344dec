// The trace session: hooks on the task path, the hand-over at stop, listeners for counters
// and decisions. The task path takes no lock: each worker writes its own worker_buf, and a
// per-worker "busy" flag lets stop() wait until no worker is inside a hook (an asymmetric
// barrier: the worker pays a compiler fence, the stopping thread a membarrier system call).
#include <linux/membarrier.h>
#include <spdlog/spdlog.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <system_error>
#include <thread>

#include "grain/clock.hpp"
#include "grain/instrumentation/counters.hpp"
#include "grain/options.hpp"
#include "session.hpp"

namespace grain::instrumentation {

using namespace trace_detail;
namespace fs = std::filesystem;

namespace trace_detail {

region_table::region_table() {
  get("Idle", region_kind::idle);
}

std::uint32_t region_table::get(std::string_view name, region_kind kind) {
  std::lock_guard lk(m_);
  auto it = ids_.find(std::string(name));
  if (it != ids_.end()) return it->second;
  const auto id = static_cast<std::uint32_t>(names_.size());
  ids_.emplace(std::string(name), id);
  names_.emplace_back(std::string(name), kind);
  return id;
}

std::vector<std::pair<std::string, region_kind>> region_table::all() const {
  std::lock_guard lk(m_);
  return names_;
}

void chain_store::save(std::uint64_t guid, const frame* first, std::size_t n) {
  std::lock_guard lk(m_);
  auto [it, inserted] = map_.try_emplace(guid);
  it->second.assign(first, first + n);
  if (inserted) {
    auto& f = filter_[slot(guid)];
    f.store(f.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
}

bool chain_store::take(std::uint64_t guid, std::vector<frame>& out) {
  std::lock_guard lk(m_);
  auto it = map_.find(guid);
  if (it == map_.end()) return false;
  out = std::move(it->second);
  map_.erase(it);
  auto& f = filter_[slot(guid)];
  f.store(f.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  return true;
}

const std::vector<std::uint32_t>& session_core::wanted_counters(const counter_snapshot& snap) {
  if (snap.layout_generation != wanted_layout || wanted_layout == ~0ull) {
    wanted_layout = snap.layout_generation;
    wanted.clear();
    for (std::size_t i = 0; i < snap.values.size(); ++i) {
      bool keep = patterns.empty();
      for (auto& p : patterns)
        if (!keep && p.matches(snap.values[i].name)) keep = true;
      if (keep) wanted.push_back(static_cast<std::uint32_t>(i));
    }
  }
  return wanted;
}

worker_buf::~worker_buf() {
  auto free_list = [](chunk* c) {
    while (c) {
      chunk* n = c->next;
      delete c;
      c = n;
    }
  };
  free_list(published.exchange(nullptr));
  free_list(returned.exchange(nullptr));
  free_list(spare);
  delete current;
}

chunk* worker_buf::take_published() noexcept {
  chunk* c = published.exchange(nullptr, std::memory_order_acquire);
  chunk* fifo = nullptr;
  while (c) {
    chunk* n = c->next;
    c->next = fifo;
    fifo = c;
    c = n;
  }
  return fifo;
}

void worker_buf::give_back(chunk* c) noexcept {
  c->next = returned.load(std::memory_order_relaxed);
  while (!returned.compare_exchange_weak(c->next, c, std::memory_order_release,
                                         std::memory_order_relaxed)) {
  }
}

std::string json_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out;
}

}  // namespace trace_detail

namespace {

// ---- the hand-over between workers and the stopping thread ------------------------------

constexpr unsigned max_workers = 4096;

struct alignas(64) busy_slot {
  std::atomic<std::uint32_t> busy{0};
};
busy_slot g_busy[max_workers];

// True when membarrier(PRIVATE_EXPEDITED) is not available: workers then use a real fence.
std::atomic<bool> g_worker_fence{true};
bool g_membarrier = false;

void init_barrier() {
  static const bool ok = [] {
    long q = ::syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (q < 0 || !(q & MEMBARRIER_CMD_PRIVATE_EXPEDITED)) return false;
    return ::syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
  }();
  g_membarrier = ok;
  g_worker_fence.store(!ok, std::memory_order_relaxed);
}

inline void light_barrier() noexcept {
  if (g_worker_fence.load(std::memory_order_relaxed))
    std::atomic_thread_fence(std::memory_order_seq_cst);
  else
    std::atomic_signal_fence(std::memory_order_seq_cst);
}

void heavy_barrier() noexcept {
  if (!g_membarrier || ::syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0)
    std::atomic_thread_fence(std::memory_order_seq_cst);
}

std::atomic<session_core*> g_active{nullptr};
std::mutex g_install_mutex;
runtime_hooks g_prev;  // hooks installed before ours, called first (chained)
bool g_installed = false;

struct busy_guard {
  std::atomic<std::uint32_t>& b;
  explicit busy_guard(unsigned w) noexcept : b(g_busy[w].busy) {
    b.store(1, std::memory_order_relaxed);
    light_barrier();
  }
  ~busy_guard() { b.store(0, std::memory_order_release); }
};

// ---- per-worker recording -----------------------------------------------------------------

inline std::uint64_t clamp_ts(worker_buf& b, std::uint64_t ts) noexcept {
  if (ts < b.last_ts) ts = b.last_ts;
  b.last_ts = ts;
  return ts;
}

const char unnamed_task[] = "<unnamed>";

// Region of a task name: the name pointer is stable per task kind, so a small per-worker
// table keyed by the pointer avoids hashing the string on every task.
std::uint32_t region_of(session_core& s, worker_buf& b, const char* name) {
  if (!name) name = unnamed_task;
  const auto mask = worker_buf::cache_size - 1;
  auto h = static_cast<unsigned>((reinterpret_cast<std::uintptr_t>(name) * 0x9E3779B97F4A7C15ull) >>
                                 56) &
           mask;
  for (;;) {
    auto& e = b.cache[h];
    if (e.key == name) return e.region;
    if (!e.key) break;
    h = (h + 1) & mask;
  }
  // Miss: the shared table (locked, once per task kind and worker).
  std::string full = "task:";
  full += name;
  const std::uint32_t r = s.regions.get(full, region_kind::task);
  if (b.cache_used * 4 >= worker_buf::cache_size * 3) {
    b.cache.fill({});
    b.cache_used = 0;
    h = static_cast<unsigned>((reinterpret_cast<std::uintptr_t>(name) * 0x9E3779B97F4A7C15ull) >>
                              56) &
        mask;
  }
  while (b.cache[h].key) h = (h + 1) & mask;
  b.cache[h] = {name, r};
  ++b.cache_used;
  return r;
}

// A full chunk goes to the back end; the next one comes from the spares the back end gave
// back, or (rarely: at start, or when the consumer falls behind) from the heap.
[[gnu::noinline]] void next_chunk(session_core& s, worker_buf& b) {
  if (b.current) {
    b.current->count = static_cast<std::uint32_t>(b.cur - b.current->recs);
    chunk* c = b.current;
    c->next = b.published.load(std::memory_order_relaxed);
    while (!b.published.compare_exchange_weak(c->next, c, std::memory_order_release,
                                              std::memory_order_relaxed)) {
    }
    s.be->chunk_published();
  }
  if (!b.spare) b.spare = b.returned.exchange(nullptr, std::memory_order_acquire);
  chunk* n = b.spare;
  if (n) {
    b.spare = n->next;
  } else {
    n = new chunk;
    ++b.chunks_allocated;
  }
  n->next = nullptr;
  n->count = 0;
  b.current = n;
  b.cur = n->recs;
  b.end = n->recs + chunk_records;
}

inline void put(session_core& s, worker_buf& b, const rec& r) {
  if (b.cur == b.end) [[unlikely]]
    next_chunk(s, b);
  *b.cur++ = r;
}

inline void emit_enter(session_core& s, worker_buf& b, std::uint32_t region, std::uint64_t guid,
                       std::uint64_t parent, std::uint64_t ts, std::uint64_t child) {
  ++b.events;
  if (child) [[unlikely]]
    put(s, b, {ts, child, 0, region, rec_note});
  put(s, b, {ts, guid, parent, region, rec_enter});
}

inline void emit_leave(session_core& s, worker_buf& b, std::uint32_t region, std::uint64_t ts) {
  ++b.events;
  put(s, b, {ts, 0, 0, region, rec_leave});
}

void phase_begin(session_core& s, unsigned w, const task_info& t, std::uint64_t ts) {
  worker_buf& b = s.workers[w];
  ts = clamp_ts(b, ts);
  const std::uint32_t r = region_of(s, b, t.name);
  if (s.chains.maybe(t.guid)) [[unlikely]] {
    // The task suspended with inline parents open under it: they continue here.
    std::vector<frame> chain;
    if (s.chains.take(t.guid, chain))
      for (const frame& f : chain) {
        b.stack.push_back(f);
        emit_enter(s, b, f.region, f.guid, f.parent, ts, t.guid);
        ++b.enters;
        ++b.reentries;
      }
  }
  b.stack.push_back({t.guid, t.parent_guid, r});
  emit_enter(s, b, r, t.guid, t.parent_guid, ts, 0);
  ++b.enters;
}

void phase_end(session_core& s, unsigned w, const task_info& t, bool terminated, std::uint64_t ts) {
  worker_buf& b = s.workers[w];
  auto& st = b.stack;
  if (st.empty()) return;  // began before recording started
  ts = clamp_ts(b, ts);
  if (terminated && st.back().guid == t.guid) {
    emit_leave(s, b, st.back().region, ts);
    st.pop_back();
    return;
  }
  std::size_t i = st.size();
  while (i > 0 && st[i - 1].guid != t.guid) --i;
  if (i == 0) return;  // not open here
  --i;
  if (terminated) {
    // Frames above it (not expected) are closed with it.
    while (st.size() > i) {
      emit_leave(s, b, st.back().region, ts);
      st.pop_back();
    }
    return;
  }
  // Suspension: the whole user thread leaves this worker, with the inline parents under the
  // task; they are entered again where the task resumes.
  for (std::size_t j = st.size(); j-- > 0;) emit_leave(s, b, st[j].region, ts);
  std::size_t first = 0;
  while (first < i && st[first].guid == 0) ++first;  // never idle frames
  if (i > first) s.chains.save(t.guid, st.data() + first, i - first);
  st.clear();
}

void idle_begin(session_core& s, unsigned w, std::uint64_t ts) {
  worker_buf& b = s.workers[w];
  if (!b.stack.empty() && b.stack.back().region == idle_region) return;
  ts = clamp_ts(b, ts);
  b.stack.push_back({0, 0, idle_region});
  emit_enter(s, b, idle_region, 0, 0, ts, 0);
}

void idle_end(session_core& s, unsigned w, std::uint64_t ts) {
  worker_buf& b = s.workers[w];
  if (b.stack.empty() || b.stack.back().region != idle_region) return;
  ts = clamp_ts(b, ts);
  emit_leave(s, b, idle_region, ts);
  b.stack.pop_back();
}

// ---- the hook functions -------------------------------------------------------------------

void hk_phase_begin(unsigned w, const task_info& t, std::uint64_t ts) {
  if (auto p = g_prev.phase_begin) p(w, t, ts);
  if (w >= max_workers) return;
  busy_guard g(w);
  session_core* s = g_active.load(std::memory_order_acquire);
  if (s && w < s->workers.size()) phase_begin(*s, w, t, ts);
}

void hk_phase_end(unsigned w, const task_info& t, bool terminated, std::uint64_t ts) {
  if (auto p = g_prev.phase_end) p(w, t, terminated, ts);
  if (w >= max_workers) return;
  busy_guard g(w);
  session_core* s = g_active.load(std::memory_order_acquire);
  if (s && w < s->workers.size()) phase_end(*s, w, t, terminated, ts);
}

void hk_idle_begin(unsigned w, std::uint64_t ts) {
  if (auto p = g_prev.idle_begin) p(w, ts);
  if (w >= max_workers) return;
  busy_guard g(w);
  session_core* s = g_active.load(std::memory_order_acquire);
  if (s && w < s->workers.size()) idle_begin(*s, w, ts);
}

void hk_idle_end(unsigned w, std::uint64_t ts) {
  if (auto p = g_prev.idle_end) p(w, ts);
  if (w >= max_workers) return;
  busy_guard g(w);
  session_core* s = g_active.load(std::memory_order_acquire);
  if (s && w < s->workers.size()) idle_end(*s, w, ts);
}

// Installed for a session, chained behind what was there. At the end they leave the table if
// nobody chained behind them (otherwise they stay, doing nothing without a session, so that
// the chain stays valid), so a runtime without a trace pays nothing for them.
void install_hooks() {
  std::lock_guard lk(g_install_mutex);
  if (g_installed) return;
  runtime_hooks& h = hooks();
  g_prev.phase_begin = h.phase_begin;
  g_prev.phase_end = h.phase_end;
  g_prev.idle_begin = h.idle_begin;
  g_prev.idle_end = h.idle_end;
  h.phase_begin = &hk_phase_begin;
  h.phase_end = &hk_phase_end;
  h.idle_begin = &hk_idle_begin;
  h.idle_end = &hk_idle_end;
  g_installed = true;
}

void uninstall_hooks() {
  std::lock_guard lk(g_install_mutex);
  if (!g_installed) return;
  runtime_hooks& h = hooks();
  if (h.phase_begin != &hk_phase_begin || h.phase_end != &hk_phase_end ||
      h.idle_begin != &hk_idle_begin || h.idle_end != &hk_idle_end)
    return;
  h.phase_begin = g_prev.phase_begin;
  h.phase_end = g_prev.phase_end;
  h.idle_begin = g_prev.idle_begin;
  h.idle_end = g_prev.idle_end;
  g_installed = false;
}

// ---- listeners ----------------------------------------------------------------------------

class counter_sink final : public listener {
 public:
  explicit counter_sink(session_core& s) : s_(s) {}
  void on_sample(const counter_snapshot& snap) override {
    std::lock_guard lk(s_.aux_mutex);
    if (closed) return;
    s_.be->sample(s_, snap);
    ++s_.samples;
  }
  bool closed = false;  // under aux_mutex

 private:
  session_core& s_;
};

// Decision listeners are called outside the knob registry's lock, possibly after removal:
// the callback holds this shared state, never the session itself.
struct decision_sink {
  std::mutex m;
  session_core* s = nullptr;  // null once the session stopped
};

std::uint64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

// Remove only what a trace of ours consists of; never the directory's other contents.
void remove_old_outputs(const fs::path& dir) {
  std::error_code ec;
  for (std::string n : {"traces.otf2", "traces.def", "traces", "trace.json"}) {
    fs::remove_all(dir / n, ec);
    fs::remove_all(dir / (n + ".incomplete"), ec);
  }
}

}  // namespace

// ---- the session --------------------------------------------------------------------------

struct trace_session::impl {
  session_core core;
  std::unique_ptr<counter_sink> counters;
  std::shared_ptr<decision_sink> decisions;
  int decision_listener = -1;
  std::mutex stop_mutex;
  bool started = false;
  bool stopped = false;
  trace_stats result;

  void finish(bool emergency);
};

trace_session::trace_session(trace_config cfg) : impl_(std::make_unique<impl>()) {
  session_core& s = impl_->core;
  if (cfg.dir.empty()) throw option_error("--grain:trace: give a directory (--grain:trace=DIR)");
  if (cfg.workers == 0) cfg.workers = 1;
  if (cfg.workers > max_workers)
    throw option_error("--grain:trace: at most " + std::to_string(max_workers) +
                       " workers can be traced");
  const fs::path dir(cfg.dir);
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    // A file (or /dev/null) is no place for a trace, with or without --grain:trace-overwrite.
    if (!fs::is_directory(dir, ec))
      throw option_error("--grain:trace=" + cfg.dir + ": is " +
                         (fs::is_regular_file(dir, ec) ? "a file" : "not a directory") +
                         "; the trace is a directory: give a new path (it is created)");
    if (!cfg.overwrite)
      throw option_error("--grain:trace=" + cfg.dir +
                         ": the directory exists; choose a new one or add "
                         "--grain:trace-overwrite to replace the trace in it");
    remove_old_outputs(dir);
  }
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw option_error("--grain:trace=" + cfg.dir + ": cannot create the directory: " +
                       (ec ? ec.message() : std::string("not a directory")));
  for (auto& p : cfg.counter_patterns) {
    try {
      s.patterns.emplace_back(p);
    } catch (const std::invalid_argument& e) {
      throw option_error("--grain:trace-counters=" + p + ": " + e.what());
    }
  }
  s.cfg = std::move(cfg);
  s.path = (dir / (s.cfg.format == trace_format::otf2 ? "traces.otf2" : "trace.json")).string();
  s.workers = std::vector<worker_buf>(s.cfg.workers);
  for (auto& b : s.workers) b.stack.reserve(64);
  s.be = s.cfg.format == trace_format::otf2 ? make_otf2_backend(s) : make_perfetto_backend(s);
}

trace_session::~trace_session() {
  try {
    stop();
  } catch (...) {
  }
}

bool trace_session::recording() const noexcept {
  return impl_->started && !impl_->stopped;
}

void trace_session::start() {
  impl& I = *impl_;
  session_core& s = I.core;
  std::lock_guard lk(I.stop_mutex);
  if (I.started) return;
  init_barrier();
  s.start_ns = now_ns();
  s.realtime_at_start = realtime_ns() - (now_ns() - s.start_ns);
  s.aux_last_ts = s.start_ns;
  for (auto& b : s.workers) b.last_ts = s.start_ns;
  s.be->open_workers(s);

  session_core* expected = nullptr;
  if (!g_active.compare_exchange_strong(expected, &s, std::memory_order_acq_rel))
    throw std::runtime_error("grain: a trace is already being recorded in this process");
  install_hooks();

  // Knob values at the start, so viewers draw each knob as a step curve from the beginning.
  {
    std::lock_guard alk(s.aux_mutex);
    for (knob* k : knobs().all()) s.be->knob_value(s, k->name(), k->value(), s.start_ns);
  }
  if (s.cfg.decisions) {
    I.decisions = std::make_shared<decision_sink>();
    I.decisions->s = &s;
    I.decision_listener = knobs().add_listener([d = I.decisions](const decision_record& r) {
      std::lock_guard dl(d->m);
      session_core* sc = d->s;
      if (!sc) return;
      const bool integer = r.type != knob_type::real;
      std::lock_guard al(sc->aux_mutex);
      sc->be->decision(*sc, r, integer, sc->clamp_aux(r.time_ns));
      ++sc->decisions;
    });
  }
  if (s.cfg.counters) {
    I.counters = std::make_unique<counter_sink>(s);
    add_listener(I.counters.get());
  }
  I.started = true;
}

void trace_session::impl::finish(bool emergency) {
  session_core& s = core;
  if (counters) {
    // The final values (the sampler's own final snapshot comes after our stop).
    if (!emergency) sample_now();
    remove_listener(counters.get());
    std::lock_guard al(s.aux_mutex);
    counters->closed = true;
  }
  if (decisions) {
    knobs().remove_listener(decision_listener);
    std::lock_guard dl(decisions->m);
    decisions->s = nullptr;
  }
  // Hand-over: no worker is inside a hook once this returns, and none enters one.
  session_core* expected = &s;
  g_active.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
  uninstall_hooks();
  heavy_barrier();
  // After a crash inside a hook that worker never leaves it: its records up to the crash are
  // taken as they are rather than waiting for ever.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (std::size_t w = 0; w < s.workers.size(); ++w)
    while (g_busy[w].busy.load(std::memory_order_acquire) &&
           !(emergency && std::chrono::steady_clock::now() > give_up))
      std::this_thread::yield();

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
      result.task_enters += b.enters;
      result.reentries += b.reentries;
      result.errors += b.errors;
    }
    s.be->finalize(s, t_end, result);
    for (auto& b : s.workers) result.worker_events += b.events;
  }
}

trace_stats trace_session::stop() {
  impl& I = *impl_;
  std::lock_guard lk(I.stop_mutex);
  if (!I.started || I.stopped) return I.result;
  I.stopped = true;
  I.finish(false);
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
  if (I.result.complete)
    std::fprintf(stderr, "grain: trace written to %s before exiting\n", I.result.path.c_str());
}

}  // namespace grain::instrumentation
