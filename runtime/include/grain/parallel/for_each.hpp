#pragma once
// grain::for_each(policy, first, last, f): f(*it) for every element, like std::for_each with an
// execution policy (parallel policies need random-access iterators).
#include <iterator>
#include <type_traits>
#include <utility>

#include "grain/parallel/for_loop.hpp"

namespace grain {

template <execution::execution_policy Policy, std::input_iterator It, class F>
auto for_each(Policy&& policy, It first, It last, F&& f) {
  using P = std::remove_cvref_t<Policy>;
  if constexpr (execution::is_task_policy_v<P>) {
    return detail::run_as_task([p = execution::synchronous(policy), first, last,
                                f = std::decay_t<F>(std::forward<F>(f))]() mutable {
      grain::for_each(p, first, last, f);
    });
  } else if constexpr (!execution::is_parallel_policy_v<P>) {
    for (; first != last; ++first) f(*first);
  } else {
    static_assert(std::random_access_iterator<It>,
                  "grain::for_each(par, ...) needs random-access iterators");
    grain::for_loop(policy, first, last, [&f](It it) { f(*it); });
  }
}

}  // namespace grain
