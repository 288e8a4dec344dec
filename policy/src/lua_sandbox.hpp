#pragma once
// The sandboxed Lua state all policies share, and its limits. Separate from the grain.*
// bindings (lua_api.cpp and lua_*.cpp) and from the rules: this part knows nothing of knobs
// or counters, only what Lua code may do and for how long.
//
// Only the base, table, string (without string.dump), math, utf8 and coroutine libraries;
// no os, io, debug, package. `load` compiles text only; `require`, `dofile` and `loadfile`
// read from the module directories only (lua_module_files.cpp). Every call runs under an
// instruction budget and a deadline (count hook); the state under a memory cap (its
// allocator). The libraries and the grain table are read-only (lua_readonly.cpp).
#include <lua.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "grain/policy/engine.hpp"
#include "module_dirs.hpp"

namespace grain::policy {

// Why the Lua call in progress is being cut: every further instruction raises.
enum class cut_kind { none, budget, time, stop };

using push_args_fn = std::function<int(lua_State*)>;

class lua_sandbox {
 public:
  // Opens the state with the libraries and the grain table; std::runtime_error when it cannot
  // (a memory limit too small). `host` is the engine the bindings act on.
  lua_sandbox(engine::impl& host, const engine_options& opts, const module_dirs& dirs);
  ~lua_sandbox();
  lua_sandbox(const lua_sandbox&) = delete;
  lua_sandbox& operator=(const lua_sandbox&) = delete;

  // Compiles a file or a text chunk (never bytecode) and runs it under the limits. Throws
  // policy_error with "file:line: message".
  void run_chunk(std::string_view code, const std::string& chunk, bool is_file);
  // Calls the function `ref` with the arguments `push_args` pushes (it returns their count;
  // may be empty). Returns the error message ("file:line: ..."), or nullopt on success.
  std::optional<std::string> call(int ref, const push_args_fn& push_args);
  // Why the last call was cut (none: it was not).
  cut_kind cut() const { return cut_now; }
  // The traceback of the last error, then empty.
  std::string take_traceback();
  void unref(int ref);
  std::size_t memory() const { return mem_used.load(std::memory_order_relaxed); }

  lua_State* state() const { return L_; }
  engine::impl& host() const { return host_; }
  const module_dirs& dirs() const { return dirs_; }

  // The limits and the call in progress, as the allocator, the count hook and the checked
  // functions of the sandbox see them (C callbacks, reached through sandbox_of).
  const std::uint64_t instruction_budget;
  const std::chrono::milliseconds time_limit;
  std::atomic<std::size_t> mem_used{0};  // written by the Lua thread only (plain stores)
  const std::size_t mem_limit;
  std::uint64_t budget_used = 0;
  cut_kind cut_now = cut_kind::none;
  std::uint64_t deadline_ns = ~0ull;  // now_ns() past which the call in progress is cut
  // Set from any thread when the program ends on a signal: the call in progress and every later
  // one is cut at the hook's next check, whatever the budget and the time limit.
  std::atomic<bool> stop_requested{false};
  int hook_granularity = 1000;
  int msgh_ref = LUA_NOREF;
  std::string last_traceback;

 private:
  void start_limits();

  engine::impl& host_;
  const module_dirs& dirs_;
  lua_State* L_ = nullptr;
};

lua_sandbox& sandbox_of(lua_State* L) noexcept;
// The engine whose state this is (for the bindings).
engine::impl* engine_of(lua_State* L) noexcept;

// Parts of the sandbox in files of their own, installed by the constructor.
void install_module_loaders(lua_State* L);  // lua_module_files.cpp: require, dofile, loadfile
void lock_api(lua_State* L);                // lua_readonly.cpp: every global so far read-only

}  // namespace grain::policy
