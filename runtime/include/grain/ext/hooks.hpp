#pragma once
// The runtime's tool interface: a table of plain function pointers, like OMPT. The runtime
// never includes instrumentation or policy code; those install callbacks here. Every pointer
// may be null; the hot path pays one load and a predictable branch per hook. Several tools share
// the one table by chaining (hook_chain), so that none has to know the others.
#include <atomic>
#include <cstdint>

namespace grain {

struct task_info {
  std::uint64_t guid;         // unique per task in this process (never 0)
  std::uint64_t parent_guid;  // guid of the task that spawned it, 0 for the root/main thread
  const char* name;           // task name: annotation or a readable form of the callable type
};

// A new hook also goes into for_each_hook in runtime/src/hooks.cpp (a static_assert there
// counts them), so that hook_chain installs it.
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

// The single hook table. Tools change it through hook_chain, which writes each slot as a
// relaxed atomic, as the workers read it: a tool may come and go while workers run (a trace
// stops before they are joined), so a function once installed must stay callable. Direct
// writes through this reference are for tests that own the whole runtime.
runtime_hooks& hooks() noexcept;

// One tool's hooks, chained in front of whatever the table held: the tool's hook functions call
// prev(&runtime_hooks::x) themselves (one load and a branch, as for the table), before or after
// their own work. Tools come and go in any order, so uninstall() cannot always restore the table:
// when another tool chained in front of ours, its prev points at our functions, and removing them
// would leave it calling a chain we no longer maintain. Ours then stay installed and must do
// nothing without their session (they still call prev), and a later install() reuses them where
// they are. install() and uninstall() are serialised by one lock for the whole table; calls through
// the table take no lock. Declare the object at namespace scope (it is constant-initialised).
class hook_chain {
 public:
  // `ours`: the tool's hook functions; null entries are neither installed nor chained.
  explicit constexpr hook_chain(const runtime_hooks& ours) noexcept : ours_(ours) {}
  hook_chain(const hook_chain&) = delete;
  hook_chain& operator=(const hook_chain&) = delete;

  // What the table held before ours in one slot: call it from our hook functions,
  // `if (auto p = chain.prev(&runtime_hooks::phase_end)) p(...);`. A relaxed atomic load (a
  // plain mov on x86): install() may rewrite it while a worker is inside our hook.
  template <class F>
  F prev(F runtime_hooks::*slot) const noexcept {
    return std::atomic_ref<F>(prev_.*slot).load(std::memory_order_relaxed);
  }
  // Puts ours in front. A no-op while ours are in the chain (in front, or behind another tool
  // that chained onto them), so that the chain never leads back to ours.
  void install();
  // Restores prev when the table still points at all of ours; returns false (and leaves ours
  // in the chain, inert) when another tool chained in front of them.
  bool uninstall();
  bool installed() const;

 private:
  runtime_hooks ours_;
  mutable runtime_hooks prev_{};  // mutable: atomic_ref needs a non-const object
  bool installed_ = false;        // under the table's lock
};

}  // namespace grain
