#pragma once
// grain::reduce, like std::reduce with an execution policy:
//   reduce(policy, first, last, init, op)   init op first[0] op ... (op associative, commutative)
//   reduce(policy, first, last, init)       with std::plus<>
//   reduce(policy, first, last)             init = value_type{}
#include <functional>
#include <iterator>
#include <utility>

#include "grain/parallel/transform_reduce.hpp"

namespace grain {

namespace detail {
struct identity_ref {
  template <class T>
  constexpr T&& operator()(T&& t) const noexcept {
    return std::forward<T>(t);
  }
};
}  // namespace detail

template <execution::execution_policy Policy, std::input_iterator It, class T, class Op>
auto reduce(Policy&& policy, It first, It last, T init, Op&& op) {
  return grain::transform_reduce(std::forward<Policy>(policy), first, last, std::move(init),
                                 std::forward<Op>(op), detail::identity_ref{});
}

template <execution::execution_policy Policy, std::input_iterator It, class T>
auto reduce(Policy&& policy, It first, It last, T init) {
  return grain::reduce(std::forward<Policy>(policy), first, last, std::move(init), std::plus<>{});
}

template <execution::execution_policy Policy, std::input_iterator It>
auto reduce(Policy&& policy, It first, It last) {
  return grain::reduce(std::forward<Policy>(policy), first, last, std::iter_value_t<It>{},
                       std::plus<>{});
}

}  // namespace grain
