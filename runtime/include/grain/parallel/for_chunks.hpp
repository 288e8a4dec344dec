#pragma once
// grain::for_chunks(policy, first, last, f): f(b, e) for consecutive ranges [b, e) that cover
// the integers [first, last) exactly once, as the policy's chunker cuts them. For bodies that
// work on a range at a time (a kernel the compiler vectorises over [b, e), a per-range setup)
// rather than on one index; for_loop is the same loop calling f once per index.
//
//   grain::for_chunks(ex::par.with(ex::knob_chunk_size(k)), 0, n,
//                     [&](std::size_t b, std::size_t e) { kernel(b, e); });
//
// seq calls f(first, last) once in the caller (nothing to cut).
#include <cstddef>
#include <type_traits>
#include <utility>

#include "grain/parallel/execution_policy.hpp"
#include "grain/parallel/loop_engine.hpp"
#include "grain/parallel/task_wrap.hpp"

namespace grain {

template <execution::execution_policy Policy, class B, class E, class F>
requires(std::is_integral_v<B>&& std::is_integral_v<E>) auto for_chunks(Policy&& policy, B first_in,
                                                                        E last_in, F&& f) {
  using I = std::common_type_t<B, E>;
  const I first = static_cast<I>(first_in), last = static_cast<I>(last_in);
  using P = std::remove_cvref_t<Policy>;
  if constexpr (execution::is_task_policy_v<P>) {
    return detail::run_as_task([p = execution::synchronous(policy), first, last,
                                f = std::decay_t<F>(std::forward<F>(f))]() mutable {
      grain::for_chunks(p, first, last, f);
    });
  } else if constexpr (!execution::is_parallel_policy_v<P>) {
    if (last > first) f(first, last);
  } else {
    const std::size_t n = last > first ? static_cast<std::size_t>(last - first) : 0;
    auto body = [&](std::size_t b, std::size_t e, unsigned) {
      f(static_cast<I>(first + static_cast<I>(b)), static_cast<I>(first + static_cast<I>(e)));
    };
    detail::run_loop(policy.chunks, n, body);
  }
}

}  // namespace grain
