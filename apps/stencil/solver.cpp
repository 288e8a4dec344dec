#include "solver.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

namespace stencil {

solver::solver(const options& o, grain::knob& nx_knob, std::size_t initial_nx,
               const grain::counters::app_counter& iteration_time)
    : o_(o), nx_knob_(nx_knob), initial_nx_(initial_nx), iteration_time_(iteration_time) {}

space solver::initial(const layout& l) const {
  space s(l.count());
  for (std::size_t i = 0; i < s.size(); ++i)
    s[i] = grain::async(grain::annotate("stencil-init", [size = l.size(i), first = l.begin(i)] {
             return partition_data(size, first);
           })).share();
  return s;
}

space solver::step(const space& current, step_tracker* tracker) const {
  const std::size_t np = current.size();
  space next(np);
  // The task receives its inputs as (ready) futures rather than through grain::unwrapping:
  // it must count itself in the step even when an input failed, and unwrapping would throw
  // before the function runs.
  auto op = [p = o_.params, tracker](std::size_t index, const partition& left,
                                     const partition& middle, const partition& right) {
    arrive_on_exit counted{tracker, index};
    return heat_part(p, left.get(), middle.get(), right.get());
  };
  auto submit = [&current, &next, &op, np](std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) {
      const std::size_t left = i == 0 ? np - 1 : i - 1;
      const std::size_t right = i + 1 == np ? 0 : i + 1;
      next[i] = grain::dataflow(grain::annotate("stencil-partition", op), i, current[left],
                                current[i], current[right])
                    .share();
    }
  };
  const std::size_t chunk = o_.submit_chunk;
  if (chunk == 0 || np <= chunk) {
    submit(0, np);
    return next;
  }
  std::vector<grain::future<void>> parts;
  for (std::size_t from = 0; from < np; from += chunk)
    parts.push_back(grain::async(grain::annotate(
        "stencil-submit", [&submit, from, to = std::min(np, from + chunk)] { submit(from, to); })));
  // Every submitter refers to this frame: wait for all of them before an error may leave it.
  for (auto& f : parts) f.wait();
  for (auto& f : parts) f.get();
  return next;
}

space solver::repartition(const space& current, const layout& from, const layout& to) {
  space next(to.count());
  for (std::size_t j = 0; j < next.size(); ++j) {
    const std::size_t lo = to.begin(j), hi = to.end(j);
    const std::size_t first = from.owner(lo), last = from.owner(hi - 1);
    space inputs(current.begin() + static_cast<std::ptrdiff_t>(first),
                 current.begin() + static_cast<std::ptrdiff_t>(last) + 1);
    auto copy = [lo, hi, first, from](const space& in) {
      partition_data out(hi - lo);
      for (std::size_t k = 0; k < in.size(); ++k) {
        const std::size_t o = first + k;
        const std::size_t b = std::max(lo, from.begin(o)), e = std::min(hi, from.end(o));
        std::memcpy(out.data() + (b - lo), in[k].get().data() + (b - from.begin(o)),
                    (e - b) * sizeof(double));
      }
      return out;
    };
    next[j] =
        grain::dataflow(grain::annotate("stencil-repartition", copy), std::move(inputs)).share();
  }
  return next;
}

std::size_t solver::scheduled_nx(std::size_t step) const {
  std::size_t nx = 0;
  for (const auto& [s, v] : o_.repartition_at)
    if (s == step) nx = v;  // the last one given for a step wins
  return nx;
}

run_result solver::run() {
  run_result r;
  const std::size_t total = o_.total();
  layout l{total, std::min(initial_nx_, total)};
  r.start_ns = grain::now_ns();
  space current = initial(l);
  r.steps.reserve(o_.nt);
  std::size_t grain_since = 0;  // the step the current partitioning started with
  for (std::size_t t = 0; t < o_.nt; ++t) {
    // Keep at most w steps in flight: wait for step t - w to end. Submitted steps cannot
    // change their partitioning, so a small window lets a policy's change act soon; but the
    // workers run each partition right after its inputs (depth first), so with 2 steps in
    // flight they often wait at step boundaries for the next step to be submitted (measured
    // in docs/experiments.md): a grain that stayed the same for `grow_after` steps gets the
    // deeper window.
    const std::size_t stable_window =
        std::max(o_.window, o_.max_window ? o_.max_window : options::default_max_window);
    const std::size_t w = t - grain_since < options::grow_after ? o_.window : stable_window;
    if (o_.window != 0 && t >= w) r.steps[t - w]->done().wait();
    const std::size_t forced = scheduled_nx(t);
    if (forced != 0)
      nx_knob_.set(static_cast<double>(forced),
                   "--repartition-at=" + std::to_string(t) + ":" + std::to_string(forced),
                   "stencil");
    if (forced != 0 || t % o_.check_every == 0) {
      const auto want = static_cast<std::size_t>(
          std::clamp<std::int64_t>(nx_knob_.int_value(), 1, static_cast<std::int64_t>(total)));
      if (want != l.nx) {
        const layout to{total, want};
        current = repartition(current, l, to);
        l = to;
        ++r.repartitions;
        grain_since = t;
      }
    }
    r.steps.push_back(std::make_unique<step_tracker>(
        t, l.count(), l.nx, t == 0 ? nullptr : r.steps[t - 1].get(), r.start_ns, iteration_time_));
    current = step(current, r.steps.back().get());
  }
  if (!r.steps.empty()) r.steps.back()->done().wait();
  for (auto& p : current) p.get();  // rethrows what a partition task threw
  r.end_ns = grain::now_ns();
  r.solution = std::move(current);
  r.final_layout = l;
  return r;
}

}  // namespace stencil
