#pragma once
// grain::transform(policy, first, last, d_first, op): d_first[i] = op(first[i]); and the binary
// form transform(policy, first1, last1, first2, d_first, op): d_first[i] = op(first1[i],
// first2[i]). Both return the end of the output, like std::transform (parallel policies need
// random-access iterators).
#include <iterator>
#include <type_traits>
#include <utility>

#include "grain/parallel/for_loop.hpp"

namespace grain {

template <execution::execution_policy Policy, std::input_iterator It, class Out, class Op>
auto transform(Policy&& policy, It first, It last, Out d_first, Op&& op) {
  using P = std::remove_cvref_t<Policy>;
  if constexpr (execution::is_task_policy_v<P>) {
    return detail::run_as_task([p = execution::synchronous(policy), first, last, d_first,
                                op = std::decay_t<Op>(std::forward<Op>(op))]() mutable {
      return grain::transform(p, first, last, d_first, op);
    });
  } else if constexpr (!execution::is_parallel_policy_v<P>) {
    for (; first != last; ++first, ++d_first) *d_first = op(*first);
    return d_first;
  } else {
    static_assert(std::random_access_iterator<It> && std::random_access_iterator<Out>,
                  "grain::transform(par, ...) needs random-access iterators");
    const std::size_t n = detail::loop_distance(first, last);
    auto body = [&](std::size_t b, std::size_t e, unsigned) {
      using D = std::iter_difference_t<It>;
      using DO = std::iter_difference_t<Out>;
      for (std::size_t i = b; i < e; ++i)
        d_first[static_cast<DO>(i)] = op(first[static_cast<D>(i)]);
    };
    detail::run_loop(policy.chunks, n, body);
    return d_first + static_cast<std::iter_difference_t<Out>>(n);
  }
}

template <execution::execution_policy Policy, std::input_iterator It1, std::input_iterator It2,
          class Out, class Op>
auto transform(Policy&& policy, It1 first1, It1 last1, It2 first2, Out d_first, Op&& op) {
  using P = std::remove_cvref_t<Policy>;
  if constexpr (execution::is_task_policy_v<P>) {
    return detail::run_as_task([p = execution::synchronous(policy), first1, last1, first2, d_first,
                                op = std::decay_t<Op>(std::forward<Op>(op))]() mutable {
      return grain::transform(p, first1, last1, first2, d_first, op);
    });
  } else if constexpr (!execution::is_parallel_policy_v<P>) {
    for (; first1 != last1; ++first1, ++first2, ++d_first) *d_first = op(*first1, *first2);
    return d_first;
  } else {
    static_assert(std::random_access_iterator<It1> && std::random_access_iterator<It2> &&
                      std::random_access_iterator<Out>,
                  "grain::transform(par, ...) needs random-access iterators");
    const std::size_t n = detail::loop_distance(first1, last1);
    auto body = [&](std::size_t b, std::size_t e, unsigned) {
      for (std::size_t i = b; i < e; ++i)
        d_first[static_cast<std::iter_difference_t<Out>>(i)] =
            op(first1[static_cast<std::iter_difference_t<It1>>(i)],
               first2[static_cast<std::iter_difference_t<It2>>(i)]);
    };
    detail::run_loop(policy.chunks, n, body);
    return d_first + static_cast<std::iter_difference_t<Out>>(n);
  }
}

}  // namespace grain
