#pragma once
// Traces of tasks, counters and policy decisions (docs/tracing.md).
//
// The trace extension (grain::runtime constructs it after the instrumentation extension):
//   --grain:trace=DIR                  record DIR/traces.otf2 (OTF2), DIR/trace.pftrace
//                                      (Perfetto) or DIR/trace.json[.gz] (Chrome JSON)
//   --grain:trace-format=FORMAT        otf2 (default), perfetto, chrome or chrome.gz
//   --grain:trace-overwrite            allow DIR to exist (its old trace is replaced once the
//                                      new one is written)
//   --grain:trace-counters=PATTERN     record only matching counters (repeatable; default all)
//
// Workers record into per-worker buffers written only by their own worker (no lock on the task
// path); the archive is complete at normal exit, when main throws (std::terminate), on
// SIGINT/SIGTERM and on a crash (extension::emergency_stop).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "grain/ext/extension.hpp"

namespace grain::instrumentation {

std::unique_ptr<grain::extension> make_trace_extension();

// perfetto: Perfetto's protobuf TracePacket stream; chrome: Chrome trace-event JSON (chrome_gz:
// gzip-compressed).
enum class trace_format { otf2, perfetto, chrome, chrome_gz };

// The file a format writes in the trace directory ("traces.otf2", "trace.pftrace", ...).
const char* trace_file_name(trace_format f) noexcept;

struct trace_config {
  std::string dir;  // created; an existing DIR is refused unless overwrite
  trace_format format = trace_format::otf2;
  bool overwrite = false;
  unsigned workers = 1;   // worker ids 0..workers-1 get a location each
  unsigned locality = 0;  // OTF2 location group (rank); location ids are rank<<32 | index
  bool counters = true;   // record counter snapshots (grain::instrumentation::add_listener)
  std::vector<std::string> counter_patterns;  // '*' patterns (counter_pattern); empty: all
  bool decisions = true;                      // record knob decisions (grain::knobs().add_listener)
};

// What a finished recording wrote.
struct trace_stats {
  std::string path;                 // DIR/traces.otf2, DIR/trace.pftrace, DIR/trace.json[.gz]
  std::uint64_t task_enters = 0;    // task phases entered (Enter events of task regions)
  std::uint64_t reentries = 0;      // of those, inline parents re-entered on resumption
  std::uint64_t worker_events = 0;  // Enter/Leave events on worker locations (tasks and idle)
  std::uint64_t counter_samples = 0;
  std::uint64_t decisions = 0;
  std::uint64_t bytes = 0;  // size of the event files (OTF2) or of the Perfetto/JSON file
  // What the workers' buffers held before conversion: their records, time records included
  // (docs/tracing.md, "How it is recorded (cost)"); per worker event: buffer_bytes/worker_events.
  std::uint64_t buffer_bytes = 0;
  std::uint64_t errors = 0;  // records the writer refused (should be 0)
  // False when writing failed (a full disk): recording stopped at the first error, and what
  // was written carries the suffix ".incomplete" (path names it); error says why.
  bool complete = true;
  std::string error;
};

// One recording. The extension owns one; tests and tools that drive grain::hooks() themselves
// may create one directly. At most one session records at a time.
class trace_session {
 public:
  // Creates DIR and the writers. Throws grain::option_error for an existing DIR (without
  // overwrite) or a DIR that cannot be created, std::runtime_error when OTF2 fails. With
  // overwrite, the trace already in DIR is replaced once the session has written its own.
  explicit trace_session(trace_config cfg);
  // Stops if still recording. A session that never started (the run was refused at start-up)
  // leaves DIR as it found it: see abandon().
  ~trace_session();
  trace_session(const trace_session&) = delete;
  trace_session& operator=(const trace_session&) = delete;

  // Install the hooks (chained with what was installed before) and the listeners.
  void start();
  // Stop recording, close open regions, write definitions and close the files. Idempotent.
  trace_stats stop();
  // The same from the fatal-signal path; does nothing if a stop is already under way.
  void emergency_stop();
  // The run this session was to trace was refused (the runtime's start failed): stop if
  // recording, delete what was written, put back the trace an overwrite was to replace, and
  // remove DIR if this session created it and nothing else is in it. With several processes
  // writing one trace, only the writers close (the others may be recording into DIR).
  void abandon() noexcept;
  bool recording() const noexcept;

  struct impl;

 private:
  void open(trace_config cfg);
  std::unique_ptr<impl> impl_;
};

// What the last session of this process that stopped (stop(), not the signal path) wrote, for
// callers that traced through the runtime's --grain:trace options (benchmarks); empty before.
std::optional<trace_stats> last_trace_stats();

}  // namespace grain::instrumentation
