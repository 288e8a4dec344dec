// The heat ring over localities (distributed_ring.hpp).
#include "distributed_ring.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "generations.hpp"
#include "grain/grain.hpp"
#include "partition.hpp"
#include "step_tracker.hpp"

namespace stencil {

namespace {

enum side : std::uint32_t { from_left = 0, from_right = 1 };

// Ghost points that arrived (or are awaited) per (side, step): a post may come before the
// block reaches that step, or after it started waiting.
class mailbox {
 public:
  grain::future<double> take(std::uint32_t s, std::uint64_t step) {
    std::lock_guard lock(m_);
    auto& slot = slots_[{s, step}];
    grain::future<double> f = slot.p.get_future();
    if (slot.delivered)
      slots_.erase({s, step});
    else
      slot.taken = true;
    return f;
  }
  void deliver(std::uint32_t s, std::uint64_t step, double v) {
    std::lock_guard lock(m_);
    auto& slot = slots_[{s, step}];
    slot.p.set_value(v);
    if (slot.taken)
      slots_.erase({s, step});
    else
      slot.delivered = true;
  }

 private:
  struct entry {
    grain::promise<double> p;
    bool taken = false, delivered = false;
  };
  std::mutex m_;
  std::map<std::pair<std::uint32_t, std::uint64_t>, entry> slots_;
};

mailbox& ghosts() {
  static mailbox box;
  return box;
}

void ghost(std::uint32_t s, std::uint64_t step, double v) {
  ghosts().deliver(s, step, v);
}

struct block_job {
  std::uint64_t total = 0, steps = 0;
  double k = 0, dt = 0, dx = 0;
  bool gather = false;
};

struct block_result {
  std::vector<double> values;
  std::uint64_t first_nx = 0, final_nx = 0;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(values, first_nx, final_nx);
  }
};

std::size_t current_nx(std::size_t n) {
  grain::knob* k = grain::knobs().find("stencil.nx");
  const auto v = k ? static_cast<std::size_t>(std::max<std::int64_t>(1, k->int_value())) : n;
  return std::min(std::max<std::size_t>(v, 1), std::max<std::size_t>(n, 1));
}

// Points [1, n] of `out` (the block, with ghosts at 0 and n+1) from `in`, partition [b, e).
void heat_block(double c, const double* __restrict in, double* __restrict out, std::size_t b,
                std::size_t e) {
  for (std::size_t i = b + 1; i <= e; ++i) out[i] = heat(c, in[i - 1], in[i], in[i + 1]);
}

// How many steps may be in flight at once: enough for the ghosts of step t to travel while
// later steps' interiors run (with 2, the workers often waited at step boundaries; 4 is what the
// single-process ring uses once its grain is stable), few enough that a new stencil.nx acts
// within a few steps.
constexpr std::uint64_t steps_in_flight = 4;

block_result block_run(block_job job) {
  const std::uint32_t rank = grain::find_here().rank(), ranks = grain::get_num_localities();
  const std::size_t b0 = job.total * rank / ranks, b1 = job.total * (rank + 1) / ranks;
  const std::size_t n = b1 - b0;
  if (n == 0) throw std::invalid_argument("fewer points than localities");
  const grain::locality left((rank + ranks - 1) % ranks), right((rank + 1) % ranks);
  const parameters p{job.k, job.dt, job.dx};
  const double c = coefficient(p);
  // Two time levels with a ghost slot at each end. Writing step t + 2 into the buffer of step
  // t is safe without a barrier: partition i of step t + 2 waits for partitions i - 1, i, i + 1
  // of step t + 1, the only readers of partition i's points of step t. The single-process
  // ring's arrays (generations.hpp): huge pages, and the first writes (the page faults) spread
  // over the workers — a std::vector zeroed by one thread made every step 1.8x slower (4 KiB
  // pages stop the prefetchers at every page) and the start serial.
  generations memory(n + 2);
  double* levels[2] = {memory.of(0), memory.of(1)};
  {
    constexpr std::size_t init_tasks = 16;  // enough for the workers of one locality
    std::vector<grain::future<void>> init;
    for (std::size_t k = 0; k < init_tasks; ++k)
      init.push_back(
          grain::async([&levels, b0, b = n * k / init_tasks, e = n * (k + 1) / init_tasks] {
            for (std::size_t i = b; i < e; ++i) {
              levels[0][i + 1] = static_cast<double>(b0 + i);
              levels[1][i + 1] = 0.0;
            }
          }));
    for (auto& f : init) f.get();
    levels[0][0] = levels[0][n + 1] = levels[1][0] = levels[1][n + 1] = 0.0;
  }
  const auto iteration_time = grain::counters::define(
      "/app/iteration-time", "grain-stencil: duration of the last time step", "ns");

  // My edges of step 0 are my neighbours' ghosts of step 0; later edges are posted by the
  // edge partitions themselves as soon as they computed them (dataflow, no step barrier).
  grain::post(left, grain::action<&ghost>{}, std::uint32_t(from_right), std::uint64_t(0),
              levels[0][1]);
  grain::post(right, grain::action<&ghost>{}, std::uint32_t(from_left), std::uint64_t(0),
              levels[0][n]);

  block_result r;
  std::size_t nx = current_nx(n);
  r.first_nx = nx;
  std::vector<grain::shared_future<void>> parts((n + nx - 1) / nx,
                                                grain::make_ready_future().share());
  std::vector<std::unique_ptr<step_tracker>> steps;
  const std::uint64_t start_ns = grain::now_ns();
  for (std::uint64_t t = 0; t < job.steps; ++t) {
    if (t >= steps_in_flight) steps[t - steps_in_flight]->done().wait();
    // A new grain acts at a step boundary: let the steps in flight end, then re-partition.
    if (const std::size_t want = current_nx(n); want != nx) {
      for (auto& f : parts) f.get();
      nx = want;
      parts.assign((n + nx - 1) / nx, grain::make_ready_future().share());
    }
    r.final_nx = nx;
    const std::size_t np = parts.size();
    steps.push_back(std::make_unique<step_tracker>(t, np, nx, t == 0 ? nullptr : steps.back().get(),
                                                   start_ns, iteration_time));
    step_tracker* tracker = steps.back().get();
    double* in = levels[t % 2];
    double* out = levels[(t + 1) % 2];
    const bool more = t + 1 < job.steps;
    // Partition q computes points [b, e) of the block (indices b + 1 .. e in the buffers).
    auto compute = [=](std::size_t q, std::size_t b, std::size_t e) {
      arrive_on_exit counted{tracker, q};
      heat_block(c, in, out, b, e);
      if (more && b == 0)
        grain::post(left, grain::action<&ghost>{}, std::uint32_t(from_right), t + 1, out[1]);
      if (more && e == n)
        grain::post(right, grain::action<&ghost>{}, std::uint32_t(from_left), t + 1, out[n]);
    };
    auto gl = ghosts().take(from_left, t).share();
    auto gr = ghosts().take(from_right, t).share();
    const auto none = grain::make_ready_future(0.0).share();  // the side an edge does not need
    std::vector<grain::shared_future<void>> next(np);
    for (std::size_t q = 0; q < np; ++q) {
      const std::size_t b = q * nx, e = std::min(n, b + nx);
      const auto& lo = q == 0 ? parts[q] : parts[q - 1];
      const auto& hi = q + 1 == np ? parts[q] : parts[q + 1];
      if (q == 0 || q + 1 == np) {
        // An edge partition: its ghost goes into the buffer's slot before it computes.
        next[q] =
            grain::dataflow(
                [=](const grain::shared_future<void>& a, const grain::shared_future<void>& m,
                    const grain::shared_future<void>& z, const grain::shared_future<double>& l,
                    const grain::shared_future<double>& h) {
                  a.get(), m.get(), z.get();
                  if (b == 0) in[0] = l.get();
                  if (e == n) in[n + 1] = h.get();
                  compute(q, b, e);
                },
                lo, parts[q], hi, q == 0 ? gl : none, q + 1 == np ? gr : none)
                .share();
      } else {
        next[q] = grain::dataflow(
                      [=](const grain::shared_future<void>& a, const grain::shared_future<void>& m,
                          const grain::shared_future<void>& z) {
                        a.get(), m.get(), z.get();
                        compute(q, b, e);
                      },
                      lo, parts[q], hi)
                      .share();
      }
    }
    parts = std::move(next);
  }
  for (auto& f : parts) f.get();  // rethrows what a partition threw
  if (!steps.empty()) steps.back()->done().wait();
  if (job.gather) {
    const double* last = levels[job.steps % 2];
    r.values.assign(last + 1, last + 1 + n);
  }
  return r;
}

// The blocks' results in rank order, or the first error of any block as soon as it arrives:
// a rank running another program refuses its block, and ours would wait for ever for the
// ghosts that rank never sends.
std::vector<block_result> results_or_first_error(std::vector<grain::future<block_result>> fs) {
  std::vector<block_result> out(fs.size());
  std::vector<std::size_t> rank(fs.size());
  for (std::size_t r = 0; r < rank.size(); ++r) rank[r] = r;
  while (!fs.empty()) {
    auto any = grain::when_any(std::move(fs)).get();
    fs = std::move(any.futures);
    out[rank[any.index]] = fs[any.index].get();  // rethrows the block's error
    fs.erase(fs.begin() + static_cast<std::ptrdiff_t>(any.index));
    rank.erase(rank.begin() + static_cast<std::ptrdiff_t>(any.index));
  }
  return out;
}

}  // namespace

distributed_result run_distributed(const options& o, bool gather) {
  const block_job job{o.total(), o.nt, o.params.k, o.params.dt, o.params.dx, gather};
  if (o.total() < grain::get_num_localities())
    throw std::invalid_argument("--localities needs at least one point per locality");
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<grain::future<block_result>> fs;
  for (grain::locality l : grain::find_all_localities())
    fs.push_back(grain::async(l, grain::action<&block_run>{}, job));
  distributed_result r;
  const std::vector<block_result> blocks = results_or_first_error(std::move(fs));
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (auto& b : blocks) {
    r.u.insert(r.u.end(), b.values.begin(), b.values.end());
    r.first_nx.push_back(b.first_nx);
    r.final_nx.push_back(b.final_nx);
  }
  return r;
}

}  // namespace stencil
