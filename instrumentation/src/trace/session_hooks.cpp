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
  if (w >= max_workers) return;
  busy_guard g(w);
  session_core* s = g_active.load(std::memory_order_acquire);
  if (s && w < s->workers.size()) record(*s);
}

void hk_phase_begin(unsigned w, const task_info& t, std::uint64_t ts) {
  if (auto p = g_chain.prev(&runtime_hooks::phase_begin)) p(w, t, ts);
  record_in_session(w, [&](session_core& s) { phase_begin(s, w, t, ts); });
}

void hk_phase_end(unsigned w, const task_info& t, bool terminated, std::uint64_t ts) {
  if (auto p = g_chain.prev(&runtime_hooks::phase_end)) p(w, t, terminated, ts);
  record_in_session(w, [&](session_core& s) { phase_end(s, w, t, terminated, ts); });
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
