#pragma once
// What a worker writes on the task path, and the one format between the recorder and the back
// ends. The recorder appends compact records to its chunk (8-byte words: a task Enter is one
// word when the task's parent is the worker's innermost open task and three otherwise, a Leave
// or an idle Enter one), with the timestamp as the delta from the worker's previous record;
// record_decoder turns them back into `rec`s, which the back ends convert. A new
// kind of record is a rec_* value here (with its encoding in encode_head/decode), an emit_*
// function in recorder.hpp and a case in the back ends' convert (otf2_backend.cpp,
// perfetto_backend.cpp, chrome_backend.cpp). See docs/tracing.md for what the records become in
// the archive, and "How it is recorded (cost)" for why they are compact.
#include <cstddef>
#include <cstdint>
#include <vector>

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
// and one record with a head word of its own layout:
//   code_enter_child              -                     8 bytes: the Enter of a task whose
//                                 parent is the innermost region open on the worker (a child run
//                                 inline, fib's and skynet's common case): bits 3-18 the region,
//                                 19-38 the time since the previous record (up to 1 ms), 39-63
//                                 the GUID minus the parent's, biased by 2^24. The parent and so
//                                 the GUID come from the decoder's stack of open regions, which
//                                 is why a worker's chunks are decoded in order by one decoder.
enum : std::uint64_t {
  code_enter = 0,
  code_leave = 1,
  code_note = 2,
  code_resume = 3,
  code_enter_bare = 4,
  code_enter_child = 5,
  code_time = 7,
};
inline constexpr unsigned head_region_shift = 3;
inline constexpr unsigned head_dt_shift = 27;
inline constexpr std::uint32_t max_encoded_region = (1u << 24) - 1;
inline constexpr std::uint64_t max_encoded_dt = (1ull << 37) - 1;
inline constexpr unsigned max_record_words = 3;
// Room a record needs in a chunk: itself, after a time record (a long gap).
inline constexpr unsigned record_room_words = max_record_words + 2;

inline constexpr unsigned child_dt_shift = 19;
inline constexpr unsigned child_delta_shift = 39;
inline constexpr std::uint32_t max_child_region = (1u << 16) - 1;
inline constexpr std::uint64_t max_child_dt = (1ull << 20) - 1;
inline constexpr std::uint64_t child_delta_bias = 1ull << 24;
inline constexpr std::uint64_t child_delta_limit = 1ull << 25;  // biased deltas below it fit

constexpr std::uint64_t encode_head(std::uint64_t code, std::uint32_t region,
                                    std::uint64_t dt) noexcept {
  return code | static_cast<std::uint64_t>(region) << head_region_shift | dt << head_dt_shift;
}

// Whether a child's Enter fits one word; `delta` is its GUID minus its parent's (mod 2^64).
constexpr bool fits_child(std::uint32_t region, std::uint64_t dt, std::uint64_t delta) noexcept {
  return region <= max_child_region && dt <= max_child_dt &&
         delta + child_delta_bias < child_delta_limit;
}

constexpr std::uint64_t encode_child(std::uint32_t region, std::uint64_t dt,
                                     std::uint64_t delta) noexcept {
  return code_enter_child | static_cast<std::uint64_t>(region) << head_region_shift |
         dt << child_dt_shift | (delta + child_delta_bias) << child_delta_shift;
}

// Turns one worker's records back into `rec`s. It keeps the GUIDs of the regions open on the
// worker (idle: 0), as the recorder's frame stack does, because a code_enter_child names its
// parent only as "the innermost open region": so one decoder per worker, fed that worker's
// chunks in the order they were written. Times need no state: each chunk starts with a time
// record.
class record_decoder {
 public:
  // Calls f(const rec&) for each record in [p, e) (one chunk, the worker's next).
  template <class F>
  void decode(const std::uint64_t* p, const std::uint64_t* e, F&& f) {
    std::uint64_t ts = 0;
    while (p < e) {
      const std::uint64_t h = *p++;
      const std::uint64_t code = h & 7;
      if (code == code_enter_child) {
        ts += (h >> child_dt_shift) & max_child_dt;
        const std::uint64_t parent = open_.empty() ? 0 : open_.back();
        const rec r{ts, parent + ((h >> child_delta_shift) - child_delta_bias), parent,
                    static_cast<std::uint32_t>(h >> head_region_shift) & max_child_region,
                    rec_enter};
        open_.push_back(r.guid);
        f(r);
        continue;
      }
      ts += h >> head_dt_shift;
      rec r{ts, 0, 0, static_cast<std::uint32_t>(h >> head_region_shift) & max_encoded_region,
            rec_enter};
      switch (code) {
        case code_enter:
          r.guid = p[0];
          r.parent = p[1];
          p += 2;
          open_.push_back(r.guid);
          break;
        case code_enter_bare:
          open_.push_back(0);
          break;
        case code_leave:
          r.kind = rec_leave;
          if (!open_.empty()) open_.pop_back();
          break;
        case code_note:
        case code_resume:
          r.kind = code == code_note ? rec_note : rec_resume;
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

  // Regions open after the records decoded so far.
  std::size_t open_regions() const noexcept { return open_.size(); }

 private:
  std::vector<std::uint64_t> open_;
};

}  // namespace grain::instrumentation::trace_detail
