#pragma once
// What a worker writes on the task path, and the one format between the recorder and the back
// ends. The recorder appends compact records to its chunk (4-byte units: a Leave, an idle Enter
// and the Enter of a child of the worker's innermost open task, of its kind, take one; other
// Enters two or six), with the timestamp as the delta from the worker's previous record;
// record_decoder turns them back into `rec`s, which the back ends convert. A new
// kind of record is a rec_* value here (with its encoding and a case in decode), an emit_*
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

// The encoding, in 4-byte units. A record's first unit holds its code in bits 0-2. The short
// records are that one unit:
//   code_leave        4 bytes: bits 3-31 the time since the worker's previous record (up to
//                     0.54 s); the region is the innermost open one's
//   code_enter_bare   4 bytes: the same for an idle period
//   code_enter_same   4 bytes: a child of the innermost open task, of the same kind (fib's,
//                     skynet's and UTS's common case): bits 3-15 the time (up to 8 us), bits
//                     16-31 its GUID minus the parent's, biased by 2^15
// The others start with a 64-bit head (two units, low first), 8-byte values following:
//   code_enter_child  8 bytes: a child of the innermost open task, of any kind: bits 3-18 the
//                     region, 19-38 the time (up to 1 ms), 39-63 the GUID minus the parent's,
//                     biased by 2^24
//   code_enter        24 bytes: head (bits 3-26 the region, 27-63 the time, up to 137 s),
//                     GUID, parent GUID: any other task phase
//   code_note, code_resume   16 bytes: head (time as code_enter's), the resumed task's GUID
//   code_time         16 bytes: head, absolute timestamp: the base of the times that follow
//                     (every chunk starts with one; a gap too long for a record needs one)
// The parent of a child record, and the region of a Leave, come from the decoder's stack of open
// regions, which mirrors the recorder's: so one decoder per worker, fed that worker's chunks in
// the order they were written.
enum : std::uint32_t {
  code_enter = 0,
  code_leave = 1,
  code_note = 2,
  code_resume = 3,
  code_enter_bare = 4,
  code_enter_child = 5,
  code_enter_same = 6,
  code_time = 7,
};
using unit = std::uint32_t;

inline constexpr unsigned head_region_shift = 3;
inline constexpr unsigned head_dt_shift = 27;
inline constexpr std::uint32_t max_encoded_region = (1u << 24) - 1;
inline constexpr std::uint64_t max_encoded_dt = (1ull << 37) - 1;
inline constexpr unsigned max_record_units = 6;
// Room a record needs in a chunk: itself, after a time record (a long gap).
inline constexpr unsigned record_room_units = max_record_units + 4;

inline constexpr unsigned short_dt_shift = 3;
inline constexpr std::uint64_t max_short_dt = (1ull << 29) - 1;

inline constexpr unsigned same_delta_shift = 16;
inline constexpr std::uint64_t max_same_dt = (1ull << 13) - 1;
inline constexpr std::uint64_t same_delta_bias = 1ull << 15;
inline constexpr std::uint64_t same_delta_limit = 1ull << 16;  // biased deltas below it fit

inline constexpr unsigned child_dt_shift = 19;
inline constexpr unsigned child_delta_shift = 39;
inline constexpr std::uint32_t max_child_region = (1u << 16) - 1;
inline constexpr std::uint64_t max_child_dt = (1ull << 20) - 1;
inline constexpr std::uint64_t child_delta_bias = 1ull << 24;
inline constexpr std::uint64_t child_delta_limit = 1ull << 25;

constexpr std::uint64_t encode_head(std::uint64_t code, std::uint32_t region,
                                    std::uint64_t dt) noexcept {
  return code | static_cast<std::uint64_t>(region) << head_region_shift | dt << head_dt_shift;
}

// A Leave or an idle Enter; dt <= max_short_dt.
constexpr unit encode_short(unit code, std::uint64_t dt) noexcept {
  return code | static_cast<unit>(dt) << short_dt_shift;
}

// Whether a child's Enter fits one unit (it is of its parent's kind); `delta` is its GUID minus
// its parent's (mod 2^64).
constexpr bool fits_same(std::uint64_t dt, std::uint64_t delta) noexcept {
  return dt <= max_same_dt && delta + same_delta_bias < same_delta_limit;
}

constexpr unit encode_same(std::uint64_t dt, std::uint64_t delta) noexcept {
  return code_enter_same | static_cast<unit>(dt) << short_dt_shift |
         static_cast<unit>(delta + same_delta_bias) << same_delta_shift;
}

// Whether a child's Enter fits the 8-byte record.
constexpr bool fits_child(std::uint32_t region, std::uint64_t dt, std::uint64_t delta) noexcept {
  return region <= max_child_region && dt <= max_child_dt &&
         delta + child_delta_bias < child_delta_limit;
}

constexpr std::uint64_t encode_child(std::uint32_t region, std::uint64_t dt,
                                     std::uint64_t delta) noexcept {
  return code_enter_child | static_cast<std::uint64_t>(region) << head_region_shift |
         dt << child_dt_shift | (delta + child_delta_bias) << child_delta_shift;
}

// An 8-byte value at p (4-byte aligned), low unit first.
inline void store64(unit* p, std::uint64_t v) noexcept {
  p[0] = static_cast<unit>(v);
  p[1] = static_cast<unit>(v >> 32);
}
inline std::uint64_t load64(const unit* p) noexcept {
  return p[0] | static_cast<std::uint64_t>(p[1]) << 32;
}

// Turns one worker's records back into `rec`s, keeping the regions open on the worker (GUID and
// region; idle: GUID 0) as the recorder's frame stack does.
class record_decoder {
 public:
  // Calls f(const rec&) for each record in [p, e) (one chunk, the worker's next).
  template <class F>
  void decode(const unit* p, const unit* e, F&& f) {
    std::uint64_t ts = 0;
    while (p < e) {
      const unit u = *p;
      switch (u & 7) {
        case code_leave: {
          ++p;
          ts += u >> short_dt_shift;
          const std::uint32_t region = innermost().region;
          if (!open_.empty()) open_.pop_back();
          f(rec{ts, 0, 0, region, rec_leave});
          continue;
        }
        case code_enter_bare:
          ++p;
          ts += u >> short_dt_shift;
          open_.push_back({0, idle_region});
          f(rec{ts, 0, 0, idle_region, rec_enter});
          continue;
        case code_enter_same: {
          ++p;
          ts += (u >> short_dt_shift) & max_same_dt;
          const open_region top = innermost();
          const std::uint64_t guid = top.guid + (u >> same_delta_shift) - same_delta_bias;
          open_.push_back({guid, top.region});
          f(rec{ts, guid, top.guid, top.region, rec_enter});
          continue;
        }
        default:
          break;
      }
      const std::uint64_t h = load64(p);
      p += 2;
      if ((h & 7) == code_enter_child) {
        ts += (h >> child_dt_shift) & max_child_dt;
        const std::uint64_t parent = innermost().guid;
        const auto region = static_cast<std::uint32_t>(h >> head_region_shift) & max_child_region;
        const std::uint64_t guid = parent + (h >> child_delta_shift) - child_delta_bias;
        open_.push_back({guid, region});
        f(rec{ts, guid, parent, region, rec_enter});
        continue;
      }
      if ((h & 7) == code_time) {
        ts = load64(p);
        p += 2;
        continue;
      }
      ts += h >> head_dt_shift;
      rec r{ts, 0, 0, static_cast<std::uint32_t>(h >> head_region_shift) & max_encoded_region,
            rec_enter};
      if ((h & 7) == code_enter) {
        r.guid = load64(p);
        r.parent = load64(p + 2);
        p += 4;
        open_.push_back({r.guid, r.region});
      } else {  // code_note, code_resume
        r.kind = (h & 7) == code_note ? rec_note : rec_resume;
        r.guid = load64(p);
        p += 2;
      }
      f(r);
    }
  }

  // decode() handing out batches, for the back ends' convert(worker, const rec*, const rec*).
  template <class F>
  void decode_batches(const unit* p, const unit* e, F&& f) {
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
  struct open_region {
    std::uint64_t guid;
    std::uint32_t region;
  };
  open_region innermost() const noexcept {
    return open_.empty() ? open_region{0, idle_region} : open_.back();
  }
  std::vector<open_region> open_;
};

}  // namespace grain::instrumentation::trace_detail
