// Split, sort and merge tasks (sort_tasks.hpp).
#include "sort_tasks.hpp"

#include <algorithm>

namespace mergesort {

namespace {

struct context {
  int* a;
  int* tmp;  // merge buffer, as long as a
  std::size_t leaf;
  const critical::routing* route;
};

grain::future<void> launch(const context& c, std::size_t lo, std::size_t hi);

struct sort_task {
  const context* c;
  std::size_t lo, hi;
  void operator()() const { std::sort(c->a + lo, c->a + hi); }
};

struct merge_task {
  const context* c;
  std::size_t lo, mid, hi;
  void operator()() const {
    std::merge(c->a + lo, c->a + mid, c->a + mid, c->a + hi, c->tmp + lo);
    std::copy(c->tmp + lo, c->tmp + hi, c->a + lo);
  }
};

struct split_task {
  const context* c;
  std::size_t lo, hi;
  void operator()() const {
    const std::size_t mid = lo + (hi - lo) / 2;
    auto left = launch(*c, lo, mid);
    auto right = launch(*c, mid, hi);
    left.get();
    right.get();
    grain::async(c->route->executor_for("merge"),
                 grain::annotate("merge", merge_task{c, lo, mid, hi}))
        .get();
  }
};

grain::future<void> launch(const context& c, std::size_t lo, std::size_t hi) {
  if (hi - lo <= c.leaf)
    return grain::async(c.route->executor_for("sort"),
                        grain::annotate("sort", sort_task{&c, lo, hi}));
  return grain::async(c.route->executor_for("split"),
                      grain::annotate("split", split_task{&c, lo, hi}));
}

struct merge_after {
  const context* c;
  std::size_t lo, mid, hi;
  void operator()(grain::future<void> left, grain::future<void> right) const {
    left.get();
    right.get();
    merge_task{c, lo, mid, hi}();
  }
};

grain::future<void> build(const context& c, std::size_t lo, std::size_t hi) {
  if (hi - lo <= c.leaf)
    return grain::async(c.route->executor_for("sort"),
                        grain::annotate("sort", sort_task{&c, lo, hi}));
  const std::size_t mid = lo + (hi - lo) / 2;
  auto left = build(c, lo, mid);
  auto right = build(c, mid, hi);
  return grain::dataflow(c.route->executor_for("merge"),
                         grain::annotate("merge", merge_after{&c, lo, mid, hi}), std::move(left),
                         std::move(right));
}

}  // namespace

void dataflow_sort(std::vector<int>& v, std::size_t leaf, const critical::routing& route) {
  std::vector<int> tmp(v.size());
  const context c{v.data(), tmp.data(), std::max<std::size_t>(leaf, 1), &route};
  build(c, 0, v.size()).get();
}

void parallel_sort(std::vector<int>& v, std::size_t leaf, const critical::routing& route) {
  std::vector<int> tmp(v.size());
  const context c{v.data(), tmp.data(), std::max<std::size_t>(leaf, 1), &route};
  launch(c, 0, v.size()).get();
}

}  // namespace mergesort
