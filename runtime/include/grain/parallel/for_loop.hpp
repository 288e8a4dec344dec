#pragma once
// grain::for_loop(policy, first, last, f): f(i) for every i in [first, last), like HPX's
// for_loop. first/last are integers (f gets the integer, of their common type; empty when
// last <= first) or random-access iterators (f gets the iterator).
#include <concepts>
#include <cstddef>
#include <iterator>
#include <type_traits>
#include <utility>

#include "grain/parallel/execution_policy.hpp"
#include "grain/parallel/loop_engine.hpp"
#include "grain/parallel/task_wrap.hpp"

namespace grain {

namespace detail {

template <class I>
std::size_t loop_distance(I first, I last) {
  if constexpr (std::is_integral_v<I>) {
    return last > first ? static_cast<std::size_t>(last - first) : 0;
  } else {
    static_assert(std::random_access_iterator<I>,
                  "grain::for_loop(par, first, last, f): first/last must be integers or "
                  "random-access iterators");
    const auto d = last - first;
    return d > 0 ? static_cast<std::size_t>(d) : 0;
  }
}

// Integers (of any two integer types) or two iterators of one type.
template <class B, class E>
concept loop_bounds = (std::is_integral_v<B> && std::is_integral_v<E>) ||
                      (std::same_as<B, E> && std::input_or_output_iterator<B>);

}  // namespace detail

template <execution::execution_policy Policy, class B, class E, class F>
requires detail::loop_bounds<B, E>
auto for_loop(Policy&& policy, B first_in, E last_in, F&& f) {
  // Integer bounds of different types (0 and v.size()) meet in their common type.
  using I = std::conditional_t<std::is_integral_v<B>, std::common_type_t<B, E>, B>;
  const I first = static_cast<I>(first_in), last = static_cast<I>(last_in);
  using P = std::remove_cvref_t<Policy>;
  if constexpr (execution::is_task_policy_v<P>) {
    return detail::run_as_task([p = execution::synchronous(policy), first, last,
                                f = std::decay_t<F>(std::forward<F>(f))]() mutable {
      grain::for_loop(p, first, last, f);
    });
  } else if constexpr (!execution::is_parallel_policy_v<P>) {
    if constexpr (std::is_integral_v<I>) {
      for (I i = first; i < last; ++i) f(i);
    } else {
      for (I i = first; i != last; ++i) f(i);
    }
  } else {
    const std::size_t n = detail::loop_distance(first, last);
    auto body = [&](std::size_t b, std::size_t e, unsigned) {
      if constexpr (std::is_integral_v<I>) {
        for (std::size_t i = b; i < e; ++i) f(static_cast<I>(first + static_cast<I>(i)));
      } else {
        using D = std::iter_difference_t<I>;
        for (std::size_t i = b; i < e; ++i) f(first + static_cast<D>(i));
      }
    };
    detail::run_loop(policy.chunks, n, body);
  }
}

}  // namespace grain
