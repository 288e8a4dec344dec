#pragma once
// grain::transform_reduce, like std::transform_reduce with an execution policy:
//   transform_reduce(policy, first, last, init, reduce_op, transform_op)
//       init (+) transform_op(first[0]) (+) ... with (+) = reduce_op
//   transform_reduce(policy, first1, last1, first2, init, reduce_op, transform_op)
//       init (+) transform_op(first1[0], first2[0]) (+) ...
//   transform_reduce(policy, first1, last1, first2, init)      inner product (plus, multiplies)
// reduce_op must be associative and commutative (the grouping and order are unspecified), as
// for std::reduce: integer results are exact, floating-point ones may differ in the last bits
// from a serial sum. Parallel policies need random-access iterators.
#include <functional>
#include <iterator>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "grain/parallel/for_loop.hpp"

namespace grain {

namespace detail {

template <class T>
struct alignas(cache_line) reduce_partial {
  std::optional<T> v;
};

// init (+) elem(0) (+) ... (+) elem(n-1): one partial per runner (a runner folds all of its
// chunks into it, no identity element needed), then the partials in runner order.
template <class T, class Red, class Elem>
T parallel_reduce(const execution::chunker& ch, std::size_t n, T init, Red& red, Elem& elem) {
  if (n == 0) return init;
  std::vector<reduce_partial<T>> parts(loop_max_runners());
  auto body = [&](std::size_t b, std::size_t e, unsigned r) {
    std::optional<T>& slot = parts[r].v;
    std::size_t i = b;
    if (!slot) slot.emplace(elem(i++));
    T acc = std::move(*slot);
    for (; i < e; ++i) acc = red(std::move(acc), elem(i));
    *slot = std::move(acc);
  };
  run_loop(ch, n, body);
  for (auto& p : parts)
    if (p.v) init = red(std::move(init), std::move(*p.v));
  return init;
}

}  // namespace detail

template <execution::execution_policy Policy, std::input_iterator It, class T, class Red,
          class Conv>
auto transform_reduce(Policy&& policy, It first, It last, T init, Red&& red, Conv&& conv) {
  using P = std::remove_cvref_t<Policy>;
  if constexpr (execution::is_task_policy_v<P>) {
    return detail::run_as_task([p = execution::synchronous(policy), first, last,
                                init = std::move(init),
                                red = std::decay_t<Red>(std::forward<Red>(red)),
                                conv = std::decay_t<Conv>(std::forward<Conv>(conv))]() mutable {
      return grain::transform_reduce(p, first, last, std::move(init), red, conv);
    });
  } else if constexpr (!execution::is_parallel_policy_v<P>) {
    for (; first != last; ++first) init = red(std::move(init), conv(*first));
    return init;
  } else {
    static_assert(std::random_access_iterator<It>,
                  "grain::transform_reduce(par, ...) needs random-access iterators");
    auto elem = [&](std::size_t i) -> decltype(auto) {
      return conv(first[static_cast<std::iter_difference_t<It>>(i)]);
    };
    return detail::parallel_reduce(policy.chunks, detail::loop_distance(first, last),
                                   std::move(init), red, elem);
  }
}

template <execution::execution_policy Policy, std::input_iterator It1, std::input_iterator It2,
          class T, class Red, class Conv>
auto transform_reduce(Policy&& policy, It1 first1, It1 last1, It2 first2, T init, Red&& red,
                      Conv&& conv) {
  using P = std::remove_cvref_t<Policy>;
  if constexpr (execution::is_task_policy_v<P>) {
    return detail::run_as_task([p = execution::synchronous(policy), first1, last1, first2,
                                init = std::move(init),
                                red = std::decay_t<Red>(std::forward<Red>(red)),
                                conv = std::decay_t<Conv>(std::forward<Conv>(conv))]() mutable {
      return grain::transform_reduce(p, first1, last1, first2, std::move(init), red, conv);
    });
  } else if constexpr (!execution::is_parallel_policy_v<P>) {
    for (; first1 != last1; ++first1, ++first2) init = red(std::move(init), conv(*first1, *first2));
    return init;
  } else {
    static_assert(std::random_access_iterator<It1> && std::random_access_iterator<It2>,
                  "grain::transform_reduce(par, ...) needs random-access iterators");
    auto elem = [&](std::size_t i) -> decltype(auto) {
      return conv(first1[static_cast<std::iter_difference_t<It1>>(i)],
                  first2[static_cast<std::iter_difference_t<It2>>(i)]);
    };
    return detail::parallel_reduce(policy.chunks, detail::loop_distance(first1, last1),
                                   std::move(init), red, elem);
  }
}

template <execution::execution_policy Policy, std::input_iterator It1, std::input_iterator It2,
          class T>
auto transform_reduce(Policy&& policy, It1 first1, It1 last1, It2 first2, T init) {
  return grain::transform_reduce(std::forward<Policy>(policy), first1, last1, first2,
                                 std::move(init), std::plus<>{}, std::multiplies<>{});
}

}  // namespace grain
