#pragma once
// What a worker writes on the task path, and the one format between the recorder and the back
// ends. The recorder appends compact records to its chunk (8-byte words: a task Enter is three
// words, a Leave or an idle Enter one), with the timestamp as the delta from the worker's
// previous record; decode() turns them back into `rec`s, which the back ends convert. A new
// kind of record is a rec_* value here (with its encoding in encode_head/decode), an emit_*
// function in recorder.hpp and a case in the back ends' convert (otf2_backend.cpp,
// perfetto_backend.cpp, chrome_backend.cpp). See docs/tracing.md for what the records become in
// the archive, and "How it is recorded (cost)" for why they are compact.
#include <cstdint>

namespace grain::instrumentation::trace_detail {

// Region 0 is "Idle"; task regions ("task:<name>") and policy regions ("policy:<rule>") follow.
inline constexpr std::uint32_t idle_region = 0;
enum class region_kind : std::uint8_t { idle, task, policy };

// One open region on a worker: a task phase (guid != 0) or idle (guid == 0).
struct frame {
  std::uint64_t guid;
  std::uint64_t parent;
  std::uint32_t region;
};

// A record as the back ends see it.
struct rec {
  std::uint64_t ts;
  std::uint64_t guid;    // enter: task guid (0: idle); note, resume: the resumed task's guid
  std::uint64_t parent;  // enter: parent guid
  std::uint32_t region;
  std::uint32_t kind;  // rec_enter, rec_leave, rec_note (precedes the enter it belongs to)
};
// rec_resume: the task `guid` resumes after a suspension (its next Enter here is not its first
// phase; the Perfetto back end draws the flow from the parent to the first phase only).
enum : std::uint32_t { rec_enter = 0, rec_leave = 1, rec_note = 2, rec_resume = 3 };

// The encoding. Every record starts with a head word: bits 0-2 the code, bits 3-26 the region,
// bits 27-63 the time since the worker's previous record (up to 137 s). Words that follow:
//   code_enter (a task phase)     guid, parent         24 bytes
//   code_enter_bare (idle)        -                     8 bytes
//   code_leave                    -                     8 bytes
//   code_note, code_resume        guid                 16 bytes
//   code_time                     absolute timestamp   16 bytes: the base of the deltas that
//                                 follow (every chunk starts with one; a longer gap needs one)
enum : std::uint64_t {
  code_enter = 0,
  code_leave = 1,
  code_note = 2,
  code_resume = 3,
  code_enter_bare = 4,
  code_time = 7,
};
inline constexpr unsigned head_region_shift = 3;
inline constexpr unsigned head_dt_shift = 27;
inline constexpr std::uint32_t max_encoded_region = (1u << 24) - 1;
inline constexpr std::uint64_t max_encoded_dt = (1ull << 37) - 1;
inline constexpr unsigned max_record_words = 3;
// Room a record needs in a chunk: itself, after a time record (a long gap).
inline constexpr unsigned record_room_words = max_record_words + 2;

constexpr std::uint64_t encode_head(std::uint64_t code, std::uint32_t region,
                                    std::uint64_t dt) noexcept {
  return code | static_cast<std::uint64_t>(region) << head_region_shift | dt << head_dt_shift;
}

// Calls f(const rec&) for each record in [p, e) (one chunk, which starts with a time record).
template <class F>
void decode(const std::uint64_t* p, const std::uint64_t* e, F&& f) {
  std::uint64_t ts = 0;
  while (p < e) {
    const std::uint64_t h = *p++;
    ts += h >> head_dt_shift;
    rec r{ts, 0, 0, static_cast<std::uint32_t>(h >> head_region_shift) & max_encoded_region,
          rec_enter};
    switch (h & 7) {
      case code_enter:
        r.guid = p[0];
        r.parent = p[1];
        p += 2;
        break;
      case code_enter_bare:
        break;
      case code_leave:
        r.kind = rec_leave;
        break;
      case code_note:
      case code_resume:
        r.kind = (h & 7) == code_note ? rec_note : rec_resume;
        r.guid = *p++;
        break;
      default:  // code_time
        ts = *p++;
        continue;
    }
    f(r);
  }
}

// decode() handing out batches, for the back ends' convert(worker, const rec*, const rec*).
template <class F>
void decode_batches(const std::uint64_t* p, const std::uint64_t* e, F&& f) {
  constexpr unsigned batch = 256;
  rec buf[batch];
  unsigned n = 0;
  decode(p, e, [&](const rec& r) {
    buf[n++] = r;
    if (n == batch) {
      f(buf, buf + n);
      n = 0;
    }
  });
  if (n) f(buf, buf + n);
}

}  // namespace grain::instrumentation::trace_detail
