#pragma once
// Recording on the task path: a task phase or an idle period begins or ends on a worker, and
// the worker appends compact records (record.hpp) to its own buffer, taking no lock and
// allocating nothing. The hooks (session_hooks.cpp) call these; they are inline because they
// run once or twice per task (docs/tracing.md, "How it is recorded (cost)"). The cold parts (a
// new task name, a full chunk, a long gap, suspensions) live in recorder.cpp.
#include <cstdint>

#include "grain/ext/hooks.hpp"
#include "session_core.hpp"

namespace grain::instrumentation::trace_detail {

// A task name the worker's cache does not hold: its region from the shared table (locked,
// once per task kind and worker), cached.
std::uint32_t region_of_new_name(session_core& s, worker_buf& b, const char* name);

inline unsigned name_slot(const char* name) noexcept {
  return static_cast<unsigned>((reinterpret_cast<std::uintptr_t>(name) * 0x9E3779B97F4A7C15ull) >>
                               56) &
         (worker_buf::cache_size - 1);
}

// Region of a name the last task of this worker did not have: from the per-worker table keyed
// by the name pointer (stable per task kind), so that no string is hashed per task.
[[gnu::noinline]] std::uint32_t region_of_other_name(session_core& s, worker_buf& b,
                                                     const char* name);

inline std::uint32_t region_of(session_core& s, worker_buf& b, const char* name) {
  if (name == b.last_name) [[likely]]
    return b.last_region;
  return region_of_other_name(s, b, name);
}

// The chunk has no room for a record: the next one (the full one goes to the back end), which
// starts with a time record.
[[gnu::noinline]] void next_chunk(session_core& s, worker_buf& b);
// A gap longer than the next record's time field holds: a time record (the new base).
[[gnu::noinline]] void time_record(worker_buf& b, std::uint64_t ts);

// The time since the worker's last record, clamped so that time never goes back on a location.
inline std::uint64_t gap_since_last(const worker_buf& b, std::uint64_t ts) noexcept {
  return ts > b.last_ts ? ts - b.last_ts : 0;
}

// Makes room for a record at `ts` (clamped to the worker's last, so that time never goes back on
// a location) and returns its delta from the worker's previous record, which it becomes; a delta
// over `max_dt` (what the record can hold) is written as a time record first.
inline std::uint64_t next_dt(session_core& s, worker_buf& b, std::uint64_t ts,
                             std::uint64_t max_dt) {
  if (b.out.end - b.out.cur < record_room_units) [[unlikely]]
    next_chunk(s, b);
  std::uint64_t dt = gap_since_last(b, ts);
  if (dt > max_dt) [[unlikely]] {
    time_record(b, ts);
    dt = 0;
  }
  b.last_ts += dt;
  return dt;
}

// Starts a record with a 64-bit head at `ts`: writes the head and returns where its values go.
inline unit* head(session_core& s, worker_buf& b, std::uint64_t code, std::uint32_t region,
                  std::uint64_t ts) {
  const std::uint64_t dt = next_dt(s, b, ts, max_encoded_dt);
  unit* p = b.out.cur;
  store64(p, encode_head(code, region, dt));
  return p + 2;
}

// Whether a task with this parent is a child of the innermost open region (then its Enter can
// be short). Before the task's own frame is pushed. No parent is the sentinel of an empty stack.
inline bool parent_is_innermost(const worker_buf& b, std::uint64_t parent) noexcept {
  return b.stack.back().guid == parent;
}

// Writes a task's Enter at p (room checked, delta time known), before its frame is pushed, in
// the shortest record that holds it; returns the end of the record.
inline unit* write_enter(const worker_buf& b, unit* p, std::uint32_t region, std::uint64_t guid,
                         std::uint64_t parent, std::uint64_t dt) noexcept {
  const std::uint64_t delta = guid - parent;
  if (parent_is_innermost(b, parent)) {
    if (b.stack.back().region == region && fits_same(dt, delta)) {
      *p = encode_same(dt, delta);
      return p + 1;
    }
    if (fits_child(region, dt, delta)) {
      store64(p, encode_child(region, dt, delta));
      return p + 2;
    }
  }
  store64(p, encode_head(code_enter, region, dt));
  store64(p + 2, guid);
  store64(p + 4, parent);
  return p + 6;
}

inline void emit_enter(session_core& s, worker_buf& b, std::uint32_t region, std::uint64_t guid,
                       std::uint64_t parent, std::uint64_t ts) {
  ++b.events;
  const std::uint64_t dt = next_dt(s, b, ts, max_encoded_dt);
  b.out.cur = write_enter(b, b.out.cur, region, guid, parent, dt);
}

// A Leave (of the innermost open region) or an idle Enter: one unit.
inline void emit_short(session_core& s, worker_buf& b, unit code, std::uint64_t ts) {
  ++b.events;
  const std::uint64_t dt = next_dt(s, b, ts, max_short_dt);
  *b.out.cur++ = encode_short(code, dt);
}

// The task resumes (rec_resume), with the inline parents that were open under it when it
// suspended.
void reenter_chain(session_core& s, worker_buf& b, const task_info& t, std::uint64_t ts);

inline void phase_begin(session_core& s, unsigned w, const task_info& t, std::uint64_t ts) {
  worker_buf& b = s.worker_bufs[w];
  const std::uint32_t r = region_of(s, b, t.name);
  if (s.chains.maybe(t.guid)) [[unlikely]]
    reenter_chain(s, b, t, ts);
  emit_enter(s, b, r, t.guid, t.parent_guid, ts);
  b.stack.push_back({t.guid, t.parent_guid, r});
  ++b.enters;
}

// The common phase begin: a task of the same kind as the last one, not resumed, with room on
// the stack and in the chunk, and a gap a 64-bit head can hold. Returns false, having written
// nothing, otherwise (then phase_begin). Written to need no call, so that the hook that calls it
// saves no registers.
inline bool try_phase_begin(session_core& s, worker_buf& b, const task_info& t,
                            std::uint64_t ts) noexcept {
  if (t.name != b.last_name || s.chains.maybe(t.guid) || b.stack.full() ||
      b.out.end - b.out.cur < record_room_units)
    return false;
  const std::uint64_t dt = gap_since_last(b, ts);
  if (dt > max_encoded_dt) return false;
  b.last_ts += dt;
  const std::uint32_t r = b.last_region;
  b.out.cur = write_enter(b, b.out.cur, r, t.guid, t.parent_guid, dt);
  b.stack.push_unchecked({t.guid, t.parent_guid, r});
  ++b.events;
  ++b.enters;
  return true;
}

// The common phase end: the innermost open task finishes. False otherwise (then phase_end).
inline bool try_phase_end(worker_buf& b, const task_info& t, bool terminated,
                          std::uint64_t ts) noexcept {
  if (!terminated || b.stack.back().guid != t.guid || b.out.end - b.out.cur < record_room_units)
    return false;
  const std::uint64_t dt = gap_since_last(b, ts);
  if (dt > max_short_dt) return false;
  b.last_ts += dt;
  *b.out.cur++ = encode_short(code_leave, dt);
  b.stack.pop_back();
  ++b.events;
  return true;
}

// The task suspends: the whole user thread leaves this worker, with its inline parents; or it
// ends below other open frames (not expected).
void phase_end_unusual(session_core& s, worker_buf& b, const task_info& t, bool terminated,
                       std::uint64_t ts);

inline void phase_end(session_core& s, unsigned w, const task_info& t, bool terminated,
                      std::uint64_t ts) {
  worker_buf& b = s.worker_bufs[w];
  auto& st = b.stack;
  if (terminated && st.back().guid == t.guid) [[likely]] {
    emit_short(s, b, code_leave, ts);
    st.pop_back();
    return;
  }
  phase_end_unusual(s, b, t, terminated, ts);
}

inline void idle_begin(session_core& s, unsigned w, std::uint64_t ts) {
  worker_buf& b = s.worker_bufs[w];
  if (b.stack.back().region == idle_region) return;  // the sentinel's region is none
  emit_short(s, b, code_enter_bare, ts);
  b.stack.push_back({0, 0, idle_region});
  b.idle.store(true, std::memory_order_relaxed);
}

inline void idle_end(session_core& s, unsigned w, std::uint64_t ts) {
  worker_buf& b = s.worker_bufs[w];
  if (b.stack.back().region != idle_region) return;
  emit_short(s, b, code_leave, ts);
  b.stack.pop_back();
  b.idle.store(false, std::memory_order_relaxed);
}

}  // namespace grain::instrumentation::trace_detail
