#pragma once
// What identifies a run in its outputs (the summary JSON, the OTF2 archive): grain's version,
// the command line as the program was started, the host, the wall-clock start time.
#include <cstdint>
#include <string>
#include <vector>

namespace grain::instrumentation::detail {

struct run_info {
  std::string version;
  std::vector<std::string> command_line;  // argv as started, --grain: options included
  std::string host;
  std::string start_time;  // ISO 8601, UTC, e.g. 2026-11-23T22:50:21.123Z
};

// start_ns: the runtime's start on grain's clock (CLOCK_MONOTONIC).
run_info current_run_info(std::uint64_t start_ns);

// A CLOCK_REALTIME time in ns as ISO 8601, UTC, to the millisecond.
std::string iso_utc(std::uint64_t realtime_ns);

// The command line as one string a shell would split back into the same words.
std::string shell_quoted(const std::vector<std::string>& words);

}  // namespace grain::instrumentation::detail
