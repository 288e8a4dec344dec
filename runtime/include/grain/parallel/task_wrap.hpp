#pragma once
// par(task) and seq(task): the algorithm runs as one task and its result arrives in a future.
#include <utility>

#include "grain/async.hpp"

namespace grain::detail {

// Runs call() as a new task; its arguments must have been captured by value.
template <class Call>
auto run_as_task(Call&& call) {
  return grain::async(launch::async, std::forward<Call>(call));
}

}  // namespace grain::detail
