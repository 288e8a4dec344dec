#pragma once
// The runtime's tool interface: a table of plain function pointers, like OMPT. The runtime
// never includes instrumentation or policy code; those install callbacks here. Every pointer
// may be null; the hot path pays one load and a predictable branch per hook.
#include <cstdint>

namespace grain {

struct task_info {
  std::uint64_t guid;         // unique per task in this process (never 0)
  std::uint64_t parent_guid;  // guid of the task that spawned it, 0 for the root/main thread
  const char* name;           // task name: annotation or a readable form of the callable type
};

struct runtime_hooks {
  // A task phase begins on `worker` (first run or resumption). `ts` is now_ns().
  void (*phase_begin)(unsigned worker, const task_info& t, std::uint64_t ts) = nullptr;
  // A task phase ends: suspended (terminated == false) or finished (terminated == true).
  void (*phase_end)(unsigned worker, const task_info& t, bool terminated,
                    std::uint64_t ts) = nullptr;
  // The worker starts / stops looking for work without finding any.
  void (*idle_begin)(unsigned worker, std::uint64_t ts) = nullptr;
  void (*idle_end)(unsigned worker, std::uint64_t ts) = nullptr;
  // A worker thread starts (before its first task) and stops (after its last).
  void (*worker_start)(unsigned worker) = nullptr;
  void (*worker_stop)(unsigned worker) = nullptr;
};

// The single hook table. Install before the runtime starts its workers (extension::start is
// called before workers run user tasks), clear after they stopped.
runtime_hooks& hooks() noexcept;

}  // namespace grain
