#pragma once
// Recording on the task path: a task phase or an idle period begins or ends on a worker, and
// the worker appends compact records to its own buffer, taking no lock. The hooks
// (session_hooks.cpp) call these; they are inline because they run once or twice per task
// (docs/tracing.md, "How it is recorded (cost)"). The cold parts (a new task name, a full chunk)
// live in recorder.cpp.
#include <cstdint>
#include <vector>

#include "grain/ext/hooks.hpp"
#include "session_core.hpp"

namespace grain::instrumentation::trace_detail {

inline std::uint64_t clamp_ts(worker_buf& b, std::uint64_t ts) noexcept {
  if (ts < b.last_ts) ts = b.last_ts;
  b.last_ts = ts;
  return ts;
}

// A task name the worker's cache does not hold: its region from the shared table (locked,
// once per task kind and worker), cached.
std::uint32_t region_of_new_name(session_core& s, worker_buf& b, const char* name);

inline unsigned name_slot(const char* name) noexcept {
  return static_cast<unsigned>((reinterpret_cast<std::uintptr_t>(name) * 0x9E3779B97F4A7C15ull) >>
                               56) &
         (worker_buf::cache_size - 1);
}

// Region of a task name: the name pointer is stable per task kind, so a small per-worker
// table keyed by the pointer avoids hashing the string on every task.
inline std::uint32_t region_of(session_core& s, worker_buf& b, const char* name) {
  if (name)
    for (unsigned h = name_slot(name);; h = (h + 1) & (worker_buf::cache_size - 1)) {
      const auto& e = b.cache[h];
      if (e.key == name) return e.region;
      if (!e.key) break;
    }
  return region_of_new_name(s, b, name);
}

// A full chunk goes to the back end.
[[gnu::noinline]] void next_chunk(session_core& s, worker_buf& b);

inline void put(session_core& s, worker_buf& b, const rec& r) {
  if (b.out.cur == b.out.end) [[unlikely]]
    next_chunk(s, b);
  *b.out.cur++ = r;
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

// The task resumes (rec_resume), with the inline parents that were open under it when it
// suspended.
void reenter_chain(session_core& s, worker_buf& b, const task_info& t, std::uint64_t ts);

inline void phase_begin(session_core& s, unsigned w, const task_info& t, std::uint64_t ts) {
  worker_buf& b = s.workers[w];
  ts = clamp_ts(b, ts);
  const std::uint32_t r = region_of(s, b, t.name);
  if (s.chains.maybe(t.guid)) [[unlikely]]
    reenter_chain(s, b, t, ts);
  b.stack.push_back({t.guid, t.parent_guid, r});
  emit_enter(s, b, r, t.guid, t.parent_guid, ts, 0);
  ++b.enters;
}

// The task suspends: the whole user thread leaves this worker, with its inline parents.
void leave_suspended(session_core& s, worker_buf& b, std::size_t i, const task_info& t,
                     std::uint64_t ts);

inline void phase_end(session_core& s, unsigned w, const task_info& t, bool terminated,
                      std::uint64_t ts) {
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
  leave_suspended(s, b, i, t, ts);
}

inline void idle_begin(session_core& s, unsigned w, std::uint64_t ts) {
  worker_buf& b = s.workers[w];
  if (!b.stack.empty() && b.stack.back().region == idle_region) return;
  ts = clamp_ts(b, ts);
  b.stack.push_back({0, 0, idle_region});
  emit_enter(s, b, idle_region, 0, 0, ts, 0);
}

inline void idle_end(session_core& s, unsigned w, std::uint64_t ts) {
  worker_buf& b = s.workers[w];
  if (b.stack.empty() || b.stack.back().region != idle_region) return;
  ts = clamp_ts(b, ts);
  emit_leave(s, b, idle_region, ts);
  b.stack.pop_back();
}

}  // namespace grain::instrumentation::trace_detail
