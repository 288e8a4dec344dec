#include "solver.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "elastic.hpp"

namespace stencil {

namespace {

// The partitions of `current` (laid out as `from`) that hold the points [b - 1, e + 1) around
// the ring: what the next step's partition [b, e) reads, and also every task that reads the
// points [b, e) of the generation it overwrites (generations.hpp).
space inputs_of(const space& current, const layout& from, std::size_t b, std::size_t e) {
  const std::size_t total = from.total;
  const std::size_t first = from.owner(b), last = from.owner(e - 1);
  const std::size_t left = from.owner(b == 0 ? total - 1 : b - 1);
  const std::size_t right = from.owner(e == total ? 0 : e);
  space in(current.begin() + static_cast<std::ptrdiff_t>(first),
           current.begin() + static_cast<std::ptrdiff_t>(last) + 1);
  if (left < first || left > last) in.push_back(current[left]);
  if ((right < first || right > last) && right != left) in.push_back(current[right]);
  return in;
}

}  // namespace

solver::solver(const options& o, grain::knob& nx_knob, std::size_t initial_nx, unsigned workers,
               const grain::counters::app_counter& iteration_time)
    : o_(o),
      nx_knob_(nx_knob),
      initial_nx_(initial_nx),
      workers_(std::max(1u, workers)),
      iteration_time_(iteration_time) {}

// The initial condition is written by tasks of the first step's partition size, unless that
// leaves workers without a share (a coarse start: 8,000,000 of 10,000,000 points is one
// partition for 2 workers): then by 8 tasks per worker. The first run's tasks fault the pages
// of both generations in, so that they are spread over the workers too.
layout solver::initial_layout(const layout& first_step) const {
  const std::size_t tasks = 8 * std::size_t(workers_);
  const std::size_t even = std::max<std::size_t>(1, (first_step.total + tasks - 1) / tasks);
  return first_step.nx <= even ? first_step : layout{first_step.total, even};
}

namespace {

// Initial condition of 1d_stencil_4 on points [b, e): the point with global index g holds the
// value g, so the problem does not depend on how it is partitioned. `touch` (the other
// generation, on the first run only) is faulted in by the same task.
void initial_range(double* u, double* touch, std::size_t b, std::size_t e) {
  for (std::size_t g = b; g < e; ++g) u[g] = static_cast<double>(g);
  if (touch) std::fill(touch + b, touch + e, 0.0);
}

}  // namespace

space solver::initial(const layout& l) {
  if (!memory_) memory_ = std::make_shared<generations>(l.total);
  double* u = memory_->of(0);
  double* touch = memory_->touched ? nullptr : memory_->of(1);
  memory_->touched = true;
  space s(l.count());
  for (std::size_t i = 0; i < s.size(); ++i)
    s[i] = grain::async(grain::annotate("stencil-init", [u, touch, b = l.begin(i), e = l.end(i)] {
             initial_range(u, touch, b, e);
             return partition_view(u + b, b, e - b);
           })).share();
  return s;
}

// The probe is a sixteenth of the partitions, at least 64 (the policies judge a counter
// window of at least a few tasks): at a fine start most of the initial condition's task
// overhead is saved, and what the probe shows (t_d, t_m of tasks at the starting grain) is
// what the first steps would show.
space solver::initial_probed(layout& l) {
  if (!memory_) memory_ = std::make_shared<generations>(l.total);
  double* u = memory_->of(0);
  double* touch = memory_->touched ? nullptr : memory_->of(1);
  memory_->touched = true;
  const std::size_t probe = std::min(l.count(), std::max<std::size_t>(64, l.count() / 16));
  {
    std::vector<grain::future<void>> tasks;
    tasks.reserve(probe);
    for (std::size_t i = 0; i < probe; ++i)
      tasks.push_back(
          grain::async(grain::annotate("stencil-init", [u, touch, b = l.begin(i), e = l.end(i)] {
            initial_range(u, touch, b, e);
          })));
    for (auto& f : tasks) f.wait();
    for (auto& f : tasks) f.get();
  }
  grain::instrumentation::sample_now();
  grain::settle_listeners();
  // The rest in chunks of the grain the policies chose (the knob is read at every claim).
  namespace ex = grain::execution;
  grain::for_chunks(ex::par.with(ex::knob_chunk_size(nx_knob_)), l.end(probe - 1), l.total,
                    [u, touch](std::size_t b, std::size_t e) { initial_range(u, touch, b, e); });
  // Everything is written: the partitions can have any layout, so they take step 0's.
  l = layout{l.total, static_cast<std::size_t>(std::clamp<std::int64_t>(
                          nx_knob_.int_value(), 1, static_cast<std::int64_t>(l.total)))};
  space s(l.count());
  for (std::size_t i = 0; i < s.size(); ++i)
    s[i] = grain::make_ready_future(partition_view(u + l.begin(i), l.begin(i), l.size(i))).share();
  return s;
}

space solver::step(std::size_t t, const space& current, const layout& from, const layout& to,
                   step_tracker* tracker) const {
  const std::size_t np = to.count();
  space next(np);
  const double* in = memory_->of(t);
  double* out = memory_->of(t + 1);
  const grain::knob* split = o_.split ? &nx_knob_ : nullptr;
  auto compute = [p = o_.params, in, out, to, split, splits = &splits_](std::size_t i) {
    const std::size_t b = to.begin(i), e = to.end(i);
    if (heat_range_elastic(p, in, out, to.total, b, e, split))
      splits->fetch_add(1, std::memory_order_relaxed);
    return partition_view(out + b, b, e - b);
  };
  // The tasks receive their inputs as (ready) futures rather than through grain::unwrapping:
  // they must count themselves in the step even when an input failed, and unwrapping would
  // throw before the function runs. get() rethrows an input's error, which then becomes this
  // partition's.
  auto neighbours = [compute, tracker](std::size_t index, const partition& left,
                                       const partition& middle, const partition& right) {
    arrive_on_exit counted{tracker, index};
    left.get();
    middle.get();
    right.get();
    return compute(index);
  };
  auto overlapping = [compute, tracker](std::size_t index, const space& inputs) {
    arrive_on_exit counted{tracker, index};
    for (const auto& f : inputs) f.get();
    return compute(index);
  };
  const bool same = from.nx == to.nx;
  auto submit = [&](std::size_t first, std::size_t last) {
    for (std::size_t i = first; i < last; ++i) {
      if (same) {
        // The partitions that hold points b - 1 and e: the neighbours on the ring.
        const std::size_t left = i == 0 ? np - 1 : i - 1;
        const std::size_t right = i + 1 == np ? 0 : i + 1;
        next[i] = grain::dataflow(grain::annotate("stencil-partition", neighbours), i,
                                  current[left], current[i], current[right])
                      .share();
      } else {
        next[i] = grain::dataflow(grain::annotate("stencil-partition", overlapping), i,
                                  inputs_of(current, from, to.begin(i), to.end(i)))
                      .share();
      }
    }
  };
  const std::size_t chunk = o_.submit_chunk;
  if (chunk == 0 || np <= chunk) {
    submit(0, np);
    return next;
  }
  std::vector<grain::future<void>> parts;
  for (std::size_t first = 0; first < np; first += chunk)
    parts.push_back(grain::async(grain::annotate(
        "stencil-submit",
        [&submit, first, last = std::min(np, first + chunk)] { submit(first, last); })));
  // Every submitter refers to this frame: wait for all of them before an error may leave it.
  for (auto& f : parts) f.wait();
  for (auto& f : parts) f.get();
  return next;
}

std::size_t solver::scheduled_nx(const std::vector<std::pair<std::size_t, std::size_t>>& at,
                                 std::size_t step) {
  std::size_t nx = 0;
  for (const auto& [s, v] : at)
    if (s == step) nx = v;  // the last one given for a step wins
  return nx;
}

run_result solver::run() {
  run_result r;
  const std::size_t total = o_.total();
  layout l{total, std::min(initial_nx_, total)};
  splits_.store(0, std::memory_order_relaxed);
  // --settle-init: when the initial condition is written at the first step's grain (a start
  // at least as fine as an even share of 8 tasks per worker), a probe of it answers the
  // policies before step 0 (initial_probed), so that their answer shapes step 0 itself; a
  // coarser start is caught while step 0 runs (its partitions split, elastic.hpp).
  const bool probe = o_.window != 0 && o_.settle_init && initial_layout(l).nx == l.nx;
  // A snapshot before the initial condition: the window the next one closes holds the probe.
  if (probe) grain::instrumentation::sample_now();
  r.start_ns = grain::now_ns();
  layout from = initial_layout(l);  // the partitioning of `current`
  space current = probe ? initial_probed(from) : initial(from);
  r.steps.reserve(o_.nt);
  std::size_t grain_since = 0;  // the step the current partitioning started with
  for (std::size_t t = 0; t < o_.nt; ++t) {
    // Keep at most w steps in flight: wait for step t - w to end. Submitted steps cannot
    // change their partitioning, so a small window lets a policy's change act soon; but the
    // workers run each partition right after its inputs (depth first), so with 2 steps in
    // flight they often wait at step boundaries for the next step to be submitted (idle-rate
    // 13 % instead of 5 % at nx = 80,000 on 2 workers): a grain that stayed the same for
    // `grow_after` steps gets the deeper window.
    const std::size_t stable_window = std::max(o_.window, o_.max_window ? o_.max_window : 4);
    const std::size_t w = t - grain_since < options::grow_after ? o_.window : stable_window;
    if (o_.window != 0 && t >= 1 && t <= o_.settle) {
      // A decision on step t - 1 acts on step t: a counter snapshot that holds all of step
      // t - 1 (the sampler's last one may be many milliseconds old), then wait until the
      // policies have handled it and the step's iteration event.
      r.steps[t - 1]->done().wait();
      grain::instrumentation::sample_now();
      grain::settle_listeners();
    } else if (o_.window != 0 && t >= w) {
      r.steps[t - w]->done().wait();
    }
    const std::size_t forced = scheduled_nx(o_.repartition_at, t);
    if (forced != 0)
      nx_knob_.set(static_cast<double>(forced),
                   "--repartition-at=" + std::to_string(t) + ":" + std::to_string(forced),
                   "stencil");
    if (forced != 0 || t % o_.check_every == 0) {
      const auto want = static_cast<std::size_t>(
          std::clamp<std::int64_t>(nx_knob_.int_value(), 1, static_cast<std::int64_t>(total)));
      if (want != l.nx) {
        l = layout{total, want};
        ++r.repartitions;
        grain_since = t;
      }
    }
    r.steps.push_back(std::make_unique<step_tracker>(
        t, l.count(), l.nx, t == 0 ? nullptr : r.steps[t - 1].get(), r.start_ns, iteration_time_));
    // Policies hear of the step before it runs: a decision on its partition count (too few
    // for the workers) then still reaches its partitions (they split, elastic.hpp).
    grain::event("iteration-start", {{"step", static_cast<double>(t)},
                                     {"nx", static_cast<double>(l.nx)},
                                     {"partitions", static_cast<double>(l.count())}});
    current = step(t, current, from, l, r.steps.back().get());
    from = l;
    if (const std::size_t mid = scheduled_nx(o_.midstep_at, t); mid != 0)
      nx_knob_.set(static_cast<double>(mid),
                   "--midstep-at=" + std::to_string(t) + ":" + std::to_string(mid), "stencil");
  }
  if (!r.steps.empty()) r.steps.back()->done().wait();
  for (auto& p : current) p.get();  // rethrows what a partition task threw
  r.end_ns = grain::now_ns();
  r.solution = std::move(current);
  r.memory = memory_;
  r.final_layout = l;
  r.splits = splits_.load(std::memory_order_relaxed);
  return r;
}

}  // namespace stencil
