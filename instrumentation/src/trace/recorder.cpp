// The recorder's cold paths (see recorder.hpp): kept out of line so that the inline task path
// stays small.
#include "recorder.hpp"

#include <string>
#include <vector>

#include "task_names.hpp"

namespace grain::instrumentation::trace_detail {

namespace {
const char unnamed_task[] = "<unnamed>";
}

std::uint32_t region_of_new_name(session_core& s, worker_buf& b, const char* name) {
  if (!name) name = unnamed_task;
  const auto mask = worker_buf::cache_size - 1;
  unsigned h = name_slot(name);
  while (b.cache[h].key) {
    if (b.cache[h].key == name) return b.cache[h].region;  // the unnamed task's slot
    h = (h + 1) & mask;
  }
  std::string full = "task:";
  full += short_task_name(name);
  const std::uint32_t r = s.regions.get(full, region_kind::task);
  if (b.cache_used * 4 >= worker_buf::cache_size * 3) {
    b.cache.fill({});
    b.cache_used = 0;
    h = name_slot(name);
  }
  while (b.cache[h].key) h = (h + 1) & mask;
  b.cache[h] = {name, r};
  ++b.cache_used;
  return r;
}

std::uint32_t region_of_other_name(session_core& s, worker_buf& b, const char* name) {
  std::uint32_t r = 0;
  for (unsigned h = name_slot(name);; h = (h + 1) & (worker_buf::cache_size - 1)) {
    const auto& e = b.cache[h];
    if (e.key == name && name) {
      r = e.region;
      break;
    }
    if (!e.key || !name) {
      r = region_of_new_name(s, b, name);
      break;
    }
  }
  if (name) {
    b.last_name = name;
    b.last_region = r;
  }
  return r;
}

void next_chunk(session_core& s, worker_buf& b) {
  if (b.out.next_chunk()) s.be->chunk_published();
  time_record(b, b.last_ts);  // the chunk's base for the deltas: its times decode on their own
}

void time_record(worker_buf& b, std::uint64_t ts) {
  store64(b.out.cur, encode_head(code_time, 0, 0));
  store64(b.out.cur + 2, ts);
  b.out.cur += 4;
  b.last_ts = ts;
}

void reenter_chain(session_core& s, worker_buf& b, const task_info& t, std::uint64_t ts) {
  std::vector<frame> chain;
  if (!s.chains.take(t.guid, chain)) return;
  // A head and the resumed task's GUID: the resumption, then a note before each inline parent.
  auto emit_resumed = [&](unit code) {
    unit* p = head(s, b, code, 0, ts);
    store64(p, t.guid);
    b.out.cur = p + 2;
  };
  emit_resumed(code_resume);
  for (const frame& f : chain) {
    emit_resumed(code_note);
    emit_enter(s, b, f.region, f.guid, f.parent, ts);
    b.stack.push_back(f);
    ++b.enters;
    ++b.reentries;
  }
}

void phase_end_unusual(session_core& s, worker_buf& b, const task_info& t, bool terminated,
                       std::uint64_t ts) {
  auto& st = b.stack;
  std::size_t i = st.size();
  while (i > 0 && st[i - 1].guid != t.guid) --i;
  if (i == 0) return;  // not open here
  --i;
  if (terminated) {
    // Frames above it (not expected) are closed with it.
    while (st.size() > i) {
      emit_short(s, b, code_leave, ts);
      st.pop_back();
    }
    return;
  }
  // Suspended: the whole user thread leaves this worker, with its inline parents.
  for (std::size_t j = st.size(); j-- > 0;) emit_short(s, b, code_leave, ts);
  std::size_t first = 0;
  while (first < i && st[first].guid == 0) ++first;  // never idle frames
  // Saved even without inline parents: the resumption is then known to be one (rec_resume).
  s.chains.save(t.guid, st.data() + first, i - first);
  st.clear();
}

}  // namespace grain::instrumentation::trace_detail
