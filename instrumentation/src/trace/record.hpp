#pragma once
// The fixed-size records a worker writes on the task path, and the one format between the
// recorder and the back ends. A new kind of record is a rec_* value here, an emit_* function
// in recorder.hpp and a case in the back ends' convert (otf2_backend.cpp, perfetto_backend.cpp).
// See docs/tracing.md for what the records become in the archive.
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

}  // namespace grain::instrumentation::trace_detail
