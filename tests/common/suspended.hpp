#pragma once
// A burst of suspended tasks: `n` tasks each wait on one latch while `body` runs, then the gate
// opens and main calls get() on each future, as users do. `after` runs in each task once it
// has been released.
#include <functional>
#include <vector>

#include "grain/async.hpp"
#include "grain/lcos/latch.hpp"

namespace grain::test {

template <class Body>
void with_suspended(int n, Body body, const std::function<void()>& after = {}) {
  grain::latch gate(1);
  grain::latch arrived(n);
  std::vector<grain::future<void>> v;
  v.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    v.push_back(grain::async([&] {
      arrived.count_down();
      gate.wait();
      if (after) after();
    }));
  arrived.wait();
  body();
  gate.count_down();
  for (auto& f : v) f.get();
}

}  // namespace grain::test
