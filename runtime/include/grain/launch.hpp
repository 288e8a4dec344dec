#pragma once
// Launch policies and executors: where and how a task runs.
#include <atomic>
#include <cstdint>
#include <optional>
#include <string_view>

#include "grain/detail/task.hpp"

namespace grain {

// async: a new task; deferred: runs in the first thread that waits; sync: runs now, inline;
// fork: the child runs now and the parent's continuation becomes stealable; adaptive: inline
// when this kind of task is predicted to be shorter than inline.lambda x t_o, else async.
// async | deferred: async while a runtime runs, deferred otherwise.
enum class launch : unsigned { async = 1, deferred = 2, sync = 4, fork = 8, adaptive = 16 };

constexpr launch operator|(launch a, launch b) noexcept {
  return static_cast<launch>(static_cast<unsigned>(a) | static_cast<unsigned>(b));
}
constexpr launch operator&(launch a, launch b) noexcept {
  return static_cast<launch>(static_cast<unsigned>(a) & static_cast<unsigned>(b));
}
constexpr launch operator^(launch a, launch b) noexcept {
  return static_cast<launch>(static_cast<unsigned>(a) ^ static_cast<unsigned>(b));
}
constexpr launch operator~(launch a) noexcept {
  return static_cast<launch>(~static_cast<unsigned>(a));
}
constexpr launch& operator&=(launch& a, launch b) noexcept {
  return a = a & b;
}
constexpr launch& operator|=(launch& a, launch b) noexcept {
  return a = a | b;
}
constexpr launch& operator^=(launch& a, launch b) noexcept {
  return a = a ^ b;
}
constexpr bool any(launch a) noexcept {
  return static_cast<unsigned>(a) != 0;
}

// The single policies by name ("async", "deferred", "sync", "fork", "adaptive"), for command
// lines; nullopt for any other name. launch_name gives "mixed" for a combination.
constexpr std::optional<launch> launch_from_name(std::string_view name) noexcept {
  if (name == "async") return launch::async;
  if (name == "deferred") return launch::deferred;
  if (name == "sync") return launch::sync;
  if (name == "fork") return launch::fork;
  if (name == "adaptive") return launch::adaptive;
  return std::nullopt;
}
constexpr const char* launch_name(launch l) noexcept {
  switch (l) {
    case launch::async:
      return "async";
    case launch::deferred:
      return "deferred";
    case launch::sync:
      return "sync";
    case launch::fork:
      return "fork";
    case launch::adaptive:
      return "adaptive";
  }
  return "mixed";
}

// An executor names a pool and a priority. The default executor means "the pool of the
// calling worker" (the default pool when called from outside the runtime).
struct executor {
  std::int16_t pool = -1;
  priority prio = priority::normal;

  constexpr executor() = default;
  constexpr executor(priority p) : prio(p) {}  // NOLINT(google-explicit-constructor)
  // Resolves the pool by name in the running runtime; throws std::invalid_argument naming the
  // pools when there is no such pool.
  explicit executor(std::string_view pool_name, priority p = priority::normal);
};

namespace detail {
// The policy of grain::async without one (future_support.cpp). Read inline: every such async
// reads it, and an out-of-line call cost more than the load.
extern std::atomic<unsigned> g_default_policy;
inline launch default_policy() noexcept {
  return static_cast<launch>(g_default_policy.load(std::memory_order_relaxed));
}
void set_default_policy(launch l) noexcept;
}  // namespace detail

}  // namespace grain
