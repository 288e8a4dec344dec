// The trace's hook functions (see session_hooks.hpp). Each calls the tool chained before it,
// then, flagged busy for the hand-over, records into the active session if there is one:
// without a session they stay valid links of the chain and record nothing.
#include "session_hooks.hpp"

#include <atomic>
#include <stdexcept>

#include "grain/ext/hooks.hpp"
#include "handover.hpp"
#include "recorder.hpp"

namespace grain::instrumentation::trace_detail {
namespace {

std::atomic<session_core*> g_active{nullptr};

void hk_phase_begin(unsigned w, const task_info& t, std::uint64_t ts);
void hk_phase_end(unsigned w, const task_info& t, bool terminated, std::uint64_t ts);
void hk_idle_begin(unsigned w, std::uint64_t ts);
void hk_idle_end(unsigned w, std::uint64_t ts);

hook_chain g_chain{runtime_hooks{.phase_begin = &hk_phase_begin,
                                 .phase_end = &hk_phase_end,
                                 .idle_begin = &hk_idle_begin,
                                 .idle_end = &hk_idle_end}};

// What every hook does after calling the previous tool's: record into the active session, if
// any, with the worker marked busy so that stop() can wait for it (handover.hpp).
template <class Record>
inline void record_in_session(unsigned w, Record&& record) {
  if (w >= max_workers) [[unlikely]]
    return;
  busy_guard g(w);
  session_core* s = g_active.load(std::memory_order_acquire);
  if (s && w < s->worker_count) [[likely]]
    record(*s);
}

// The phase hooks run once per task phase each, so their common case is written out: flag
// busy, find the session, try_phase_begin / try_phase_end (no calls, so no registers to save),
// unflag. Everything else (a chained tool, a worker number out of range, what the try_ functions
// decline) goes through the general path, as a tail call.
[[gnu::noinline]] void phase_begin_general(unsigned w, const task_info& t, std::uint64_t ts) {
  if (auto p = g_chain.prev(&runtime_hooks::phase_begin)) p(w, t, ts);
  record_in_session(w, [&](session_core& s) { phase_begin(s, w, t, ts); });
}

[[gnu::noinline]] void phase_end_general(unsigned w, const task_info& t, bool terminated,
                                         std::uint64_t ts) {
  if (auto p = g_chain.prev(&runtime_hooks::phase_end)) p(w, t, terminated, ts);
  record_in_session(w, [&](session_core& s) { phase_end(s, w, t, terminated, ts); });
}

void hk_phase_begin(unsigned w, const task_info& t, std::uint64_t ts) {
  if (!g_chain.prev(&runtime_hooks::phase_begin) && w < max_workers) [[likely]] {
    std::atomic<std::uint32_t>& busy = g_busy[w].busy;
    busy.store(1, std::memory_order_relaxed);
    light_barrier();
    session_core* s = g_active.load(std::memory_order_acquire);
    const bool done = s && w < s->worker_count && try_phase_begin(*s, s->worker_bufs[w], t, ts);
    busy.store(0, std::memory_order_release);
    if (done) [[likely]]
      return;
  }
  phase_begin_general(w, t, ts);
}

void hk_phase_end(unsigned w, const task_info& t, bool terminated, std::uint64_t ts) {
  if (!g_chain.prev(&runtime_hooks::phase_end) && w < max_workers) [[likely]] {
    std::atomic<std::uint32_t>& busy = g_busy[w].busy;
    busy.store(1, std::memory_order_relaxed);
    light_barrier();
    session_core* s = g_active.load(std::memory_order_acquire);
    const bool done =
        s && w < s->worker_count && try_phase_end(s->worker_bufs[w], t, terminated, ts);
    busy.store(0, std::memory_order_release);
    if (done) [[likely]]
      return;
  }
  phase_end_general(w, t, terminated, ts);
}

void hk_idle_begin(unsigned w, std::uint64_t ts) {
  if (auto p = g_chain.prev(&runtime_hooks::idle_begin)) p(w, ts);
  record_in_session(w, [&](session_core& s) { idle_begin(s, w, ts); });
}

void hk_idle_end(unsigned w, std::uint64_t ts) {
  if (auto p = g_chain.prev(&runtime_hooks::idle_end)) p(w, ts);
  record_in_session(w, [&](session_core& s) { idle_end(s, w, ts); });
}

}  // namespace

void attach_hooks(session_core& s) {
  init_barrier();
  session_core* expected = nullptr;
  if (!g_active.compare_exchange_strong(expected, &s, std::memory_order_acq_rel))
    throw std::runtime_error("grain: a trace is already being recorded in this process");
  g_chain.install();
}

void detach_hooks(session_core& s, bool emergency) {
  session_core* expected = &s;
  g_active.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
  g_chain.uninstall();
  wait_until_no_worker_in_hook(s.workers.size(), emergency);
}

}  // namespace grain::instrumentation::trace_detail
