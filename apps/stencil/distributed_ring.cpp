// The heat ring over localities (distributed_ring.hpp).
#include "distributed_ring.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "grain/grain.hpp"
#include "partition.hpp"

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
void heat_block(double c, const double* in, double* out, std::size_t b, std::size_t e) {
  for (std::size_t i = b + 1; i <= e; ++i) out[i] = heat(c, in[i - 1], in[i], in[i + 1]);
}

block_result block_run(block_job job) {
  const std::uint32_t rank = grain::find_here().rank(), ranks = grain::get_num_localities();
  const std::size_t b0 = job.total * rank / ranks, b1 = job.total * (rank + 1) / ranks;
  const std::size_t n = b1 - b0;
  if (n == 0) throw std::invalid_argument("fewer points than localities");
  const grain::locality left((rank + ranks - 1) % ranks), right((rank + 1) % ranks);
  const parameters p{job.k, job.dt, job.dx};
  const double c = coefficient(p);
  std::vector<double> cur(n + 2), nxt(n + 2);
  for (std::size_t i = 0; i < n; ++i) cur[i + 1] = static_cast<double>(b0 + i);
  block_result r;
  std::uint64_t last_end = grain::now_ns();
  for (std::uint64_t t = 0; t < job.steps; ++t) {
    // My edges are my neighbours' ghosts of step t.
    grain::post(left, grain::action<&ghost>{}, std::uint32_t(from_right), t, cur[1]);
    grain::post(right, grain::action<&ghost>{}, std::uint32_t(from_left), t, cur[n]);
    auto gl = ghosts().take(from_left, t);
    auto gr = ghosts().take(from_right, t);
    const std::size_t nx = current_nx(n);
    if (t == 0) r.first_nx = nx;
    r.final_nx = nx;
    const std::size_t parts = (n + nx - 1) / nx;
    std::vector<grain::future<void>> fs;
    fs.reserve(parts);
    const double* in = cur.data();
    double* out = nxt.data();
    // Partitions that read no ghost first: they run while the ghosts travel.
    for (std::size_t q = 0; q < parts; ++q) {
      const std::size_t b = q * nx, e = std::min(n, b + nx);
      if (b == 0 || e == n) continue;
      fs.push_back(grain::async([=] { heat_block(c, in, out, b, e); }));
    }
    cur[0] = gl.get();
    cur[n + 1] = gr.get();
    heat_block(c, in, out, 0, std::min(n, nx));
    if (parts > 1) heat_block(c, in, out, (parts - 1) * nx, n);
    for (auto& f : fs) f.get();
    cur.swap(nxt);
    const std::uint64_t now = grain::now_ns();
    grain::event("iteration", {{"duration_ns", static_cast<double>(now - last_end)},
                               {"step", static_cast<double>(t)},
                               {"nx", static_cast<double>(nx)},
                               {"partitions", static_cast<double>(parts)}});
    last_end = now;
  }
  if (job.gather) r.values.assign(cur.begin() + 1, cur.begin() + 1 + static_cast<long>(n));
  return r;
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
  std::vector<block_result> blocks;
  blocks.reserve(fs.size());
  for (auto& f : fs) blocks.push_back(f.get());
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (auto& b : blocks) {
    r.u.insert(r.u.end(), b.values.begin(), b.values.end());
    r.first_nx.push_back(b.first_nx);
    r.final_nx.push_back(b.final_nx);
  }
  return r;
}

}  // namespace stencil
