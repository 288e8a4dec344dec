#pragma once
// Execution policies of the parallel algorithms, HPX style:
//   grain::execution::seq                      serially, in the calling thread
//   grain::execution::par                      in parallel on the caller's pool, adaptive chunks
//   grain::execution::par.with(chunker)        ... with another chunker (chunkers.hpp)
//   grain::execution::par(grain::execution::task), seq(task)
//                                              the algorithm runs as a task and returns a future
#include <type_traits>

#include "grain/parallel/chunkers.hpp"

namespace grain::execution {

struct task_policy_tag {};
inline constexpr task_policy_tag task{};

struct sequenced_task_policy {};

struct sequenced_policy {
  constexpr sequenced_task_policy operator()(task_policy_tag) const noexcept { return {}; }
};

struct parallel_task_policy {
  chunker chunks{};
  constexpr parallel_task_policy with(chunker c) const noexcept { return {c}; }
};

struct parallel_policy {
  // The default: adaptive chunks (chunk time >= loop.lambda x t_o), which needs no tuning for
  // cheap or expensive iterations (docs/parallel-loops.md has the measurements).
  chunker chunks{};
  constexpr parallel_policy with(chunker c) const noexcept { return {c}; }
  constexpr parallel_task_policy operator()(task_policy_tag) const noexcept { return {chunks}; }
};

inline constexpr sequenced_policy seq{};
inline constexpr parallel_policy par{};

template <class T>
struct is_execution_policy : std::false_type {};
template <>
struct is_execution_policy<sequenced_policy> : std::true_type {};
template <>
struct is_execution_policy<sequenced_task_policy> : std::true_type {};
template <>
struct is_execution_policy<parallel_policy> : std::true_type {};
template <>
struct is_execution_policy<parallel_task_policy> : std::true_type {};

template <class T>
inline constexpr bool is_execution_policy_v = is_execution_policy<std::remove_cvref_t<T>>::value;

template <class T>
concept execution_policy = is_execution_policy_v<T>;

// Policies whose algorithms return a grain::future instead of the result.
template <class T>
inline constexpr bool is_task_policy_v =
    std::is_same_v<std::remove_cvref_t<T>, sequenced_task_policy> ||
    std::is_same_v<std::remove_cvref_t<T>, parallel_task_policy>;

template <class T>
inline constexpr bool is_parallel_policy_v =
    std::is_same_v<std::remove_cvref_t<T>, parallel_policy> ||
    std::is_same_v<std::remove_cvref_t<T>, parallel_task_policy>;

// The synchronous policy a task policy runs inside its task.
constexpr sequenced_policy synchronous(sequenced_policy p) noexcept {
  return p;
}
constexpr sequenced_policy synchronous(sequenced_task_policy) noexcept {
  return {};
}
constexpr parallel_policy synchronous(parallel_policy p) noexcept {
  return p;
}
constexpr parallel_policy synchronous(parallel_task_policy p) noexcept {
  return {p.chunks};
}

}  // namespace grain::execution
