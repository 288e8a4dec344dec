// --variant=grain: the leapfrog step as a dataflow over partitions. Per cycle t and partition:
//
//   forces(t, p)    <- material(t-1, p)                      (no time step needed)
//   nodes(t, q)     <- clock(t), forces(t, p) for p at q's nodes
//   kinematics(t,p) <- clock(t), nodes(t, q) for q holding p's nodes
//   material(t, p)  <- kinematics(t, p') for p' holding p's face neighbours
//   bounds(t)       =  all_reduce of material(t, *)'s time-step bounds (two-level: combined
//                      in place on the locality, then one collective across localities)
//   clock(t+1)      <- bounds(t): advance_time, the -p line, the iteration event
//
// so a partition's next phase starts when its own inputs are ready, not after a barrier, and
// the reduction of cycle t overlaps the forces of cycle t+1. The chain of these dependencies
// also orders every write after the reads of the value it overwrites (see partitioning.hpp).
// With neighbour domains on other localities (halo.hpp) three exchanges join the graph: the
// nodes' force sums between gathering and moving them, the shared nodes' motion before the
// kinematics, the face gradients before the material; each is one task that sends, the
// parcels that arrive, and one task that applies them.
// A cycle is submitted before it is known whether the run goes on to it (that needs the
// clock of the cycle before, which needs the whole cycle before that): the clock says `stop`
// then, and the cycle's tasks do nothing (the exchanges still send, so that every receive of
// the cycle completes).
#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <vector>

#include "grain/grain.hpp"
#include "kernels.hpp"
#include "partition_schedule.hpp"
#include "partitioning.hpp"
#include "report.hpp"
#include "runners.hpp"

namespace lulesh {

namespace {

using done = grain::shared_future<void>;
using messages = std::vector<grain::shared_future<std::vector<real>>>;

grain::executor critical_executor(const options& o) {
  switch (o.critical) {
    case options::critical_route::priority:
      return grain::executor{grain::priority::high};
    case options::critical_route::pool:
      return grain::executor{"critical"};
    case options::critical_route::none:
      break;
  }
  return grain::executor{};
}

// The state of the time loop at the start of a cycle, after its time increment.
struct clock_state {
  bool stop = false;
  real dt = 0, time = 0;
  index_t cycle = 0;
};
using clock_future = grain::shared_future<clock_state>;

clock_state start_cycle(domain& d, const options& o, dt_bounds mesh) {
  if (!(d.time < d.k.stoptime && d.cycle < o.iterations))
    return {true, d.deltatime, d.time, d.cycle};
  advance_time(d, mesh);
  return {false, d.deltatime, d.time, d.cycle};
}

template <class T>
std::vector<T> pick(const std::vector<T>& all, const std::vector<index_t>& which) {
  std::vector<T> v;
  v.reserve(which.size());
  for (index_t i : which) v.push_back(all[i]);
  return v;
}

// A task named `name` running f on `ex` once every future among args is ready.
template <class F, class... A>
auto task_on(const grain::executor& ex, const char* name, F&& f, A&&... args) {
  return grain::dataflow(ex, grain::annotate(name, std::forward<F>(f)), std::forward<A>(args)...)
      .share();
}
template <class F, class... A>
auto task(const char* name, F&& f, A&&... args) {
  return task_on(grain::executor{}, name, std::forward<F>(f), std::forward<A>(args)...);
}

void all_of(const std::vector<done>& v) {
  for (const auto& f : v) f.get();
}

struct cycle_futures {
  std::vector<done> material;  // per element partition
  clock_future next;           // the clock of the following cycle
};

class driver {
 public:
  driver(domain& d, const options& o, injector& inject, partition_schedule& schedule,
         bool reports_steps, const halo* h)
      : d_(d),
        o_(o),
        inject_(inject),
        schedule_(schedule),
        reports_steps_(reports_steps),
        halo_(h && h->active() ? h : nullptr),
        critical_(critical_executor(o)) {}

  run_result run();

 private:
  cycle_futures submit(const partitioning& parts, const std::vector<done>& previous,
                       const clock_future& clock, std::uint64_t generation, index_t cycle);
  // The exchange `what` of `cycle` once `after` are done: one task sends, one applies what
  // arrived (unless the cycle is not run).
  done exchange_after(exchange what, index_t cycle, const clock_future& clock,
                      const std::vector<done>& after);

  domain& d_;
  const options& o_;
  injector& inject_;
  partition_schedule& schedule_;
  const bool reports_steps_;  // raises the iteration event (one domain per locality does)
  const halo* halo_;
  // Where the material and clock tasks run (--priority): the constructor of a pool's executor
  // throws, naming the pools, when --grain:pools did not create "critical".
  grain::executor critical_;
  std::uint64_t last_end_ns_ = 0;
};

done driver::exchange_after(exchange what, index_t cycle, const clock_future& clock,
                            const std::vector<done>& after) {
  domain* d = &d_;
  const halo* h = halo_;
  const auto c = static_cast<std::uint64_t>(cycle);
  done sent = task(
      "lulesh-halo-send",
      [d, h, what, c](const std::vector<done>& in) {
        all_of(in);
        h->send(*d, what, c);
      },
      after);
  return task(
      "lulesh-halo-apply",
      [d, h, what](const clock_future& ck, const done& s, const messages& in) {
        s.get();
        if (!ck.get().stop) h->apply(*d, what, in);
      },
      clock, sent, h->receive(what, c));
}

cycle_futures driver::submit(const partitioning& parts, const std::vector<done>& previous,
                             const clock_future& clock, std::uint64_t generation, index_t cycle) {
  domain* d = &d_;
  const injector* inj = &inject_;
  const partitioning* pp = &parts;
  const bool multi = halo_ != nullptr;
  const index_t n = parts.count();
  std::vector<done> forces(n), gathered(n), nodes(n), kinematics(n);
  cycle_futures out;
  out.material.resize(n);
  for (index_t p = 0; p < n; ++p)
    forces[p] = task(
        "lulesh-forces",
        [d, inj, pp, p, cycle, clock](const done& before) {
          before.get();
          // Skip the cycle the run does not reach, when that is already known.
          if (clock.is_ready() && clock.get().stop) return;
          inj->operator()(loop::stress, loop::hourglass, cycle, p);
          element_forces(*d, pp->elements(p).begin, pp->elements(p).end);
        },
        previous[p]);
  // One domain: each node partition gathers and moves its nodes in one task. Several: all
  // gather, the sums are exchanged, then each moves its nodes.
  for (index_t q = 0; q < n; ++q)
    gathered[q] = task(
        "lulesh-nodes",
        [d, pp, q, multi](const clock_future& c, const std::vector<done>& in) {
          all_of(in);
          const clock_state s = c.get();
          if (s.stop) return;
          gather_node_forces(*d, pp->nodes(q).begin, pp->nodes(q).end);
          if (!multi) advance_nodes(*d, pp->nodes(q).begin, pp->nodes(q).end, s.dt);
        },
        clock, pick(forces, parts.elements_at_nodes(q)));
  if (multi) {
    const done summed = exchange_after(exchange::forces, cycle, clock, gathered);
    for (index_t q = 0; q < n; ++q)
      nodes[q] = task(
          "lulesh-move",
          [d, pp, q](const clock_future& c, const done& in) {
            in.get();
            const clock_state s = c.get();
            if (!s.stop) advance_nodes(*d, pp->nodes(q).begin, pp->nodes(q).end, s.dt);
          },
          clock, summed);
  } else {
    nodes = gathered;
  }
  const done synced = multi ? exchange_after(exchange::positions, cycle, clock, nodes) : done{};
  for (index_t p = 0; p < n; ++p)
    kinematics[p] = task(
        "lulesh-kinematics",
        [d, inj, pp, p](const clock_future& c, const std::vector<done>& in) {
          all_of(in);
          const clock_state s = c.get();
          if (s.stop) return;
          inj->operator()(loop::kinematics, loop::q_gradients, s.cycle, p);
          element_kinematics(*d, pp->elements(p).begin, pp->elements(p).end, s.dt);
        },
        clock, multi ? std::vector<done>{synced} : pick(nodes, parts.nodes_of_elements(p)));
  const done ghosts =
      multi ? exchange_after(exchange::gradients, cycle, clock, kinematics) : done{};
  // Every domain of the locality contributes its partitions (they all have the same count:
  // the schedule gives every domain the same partition size for a cycle).
  const auto domains = schedule_.domains();
  const grain::collective_args args{static_cast<std::uint32_t>(n * domains),
                                    static_cast<std::int64_t>(generation)};
  grain::shared_future<dt_bounds> reduced;
  // The material tasks end the cycle and feed the reduction that the next cycle's nodes wait
  // for: ahead of the next cycle's forces, which become ready at the same time.
  const grain::executor& critical = critical_;
  for (index_t p = 0; p < n; ++p) {
    std::vector<done> in = pick(kinematics, parts.face_neighbours(p));
    if (multi) in.push_back(ghosts);
    auto bounds = task_on(
        critical, "lulesh-material",
        [d, inj, pp, p](const clock_future& c, const std::vector<done>& in) {
          all_of(in);
          const clock_state s = c.get();
          if (s.stop) return dt_bounds{};
          inj->operator()(loop::monotonic_q, loop::eos, s.cycle, p);
          return element_material(*d, pp->elements(p).begin, pp->elements(p).end);
        },
        clock, std::move(in));
    out.material[p] =
        bounds
            .then(grain::annotate("lulesh-material-done",
                                  [](const grain::shared_future<dt_bounds>& b) { b.get(); }))
            .share();
    auto r = grain::all_reduce(
        bounds.then(grain::annotate(
            "lulesh-bounds", [](const grain::shared_future<dt_bounds>& b) { return b.get(); })),
        [](dt_bounds a, dt_bounds b) { return combine(a, b); }, args);
    if (p == 0) reduced = r.share();
  }
  const options* o = &o_;
  std::uint64_t* last_end = &last_end_ns_;
  const index_t chunk = parts.chunk();
  const bool reports = reports_steps_;
  out.next = task_on(
      critical, "lulesh-clock",
      [d, o, last_end, chunk, n, domains, reports](const clock_future& c,
                                                   const grain::shared_future<dt_bounds>& b) {
        const clock_state s = c.get();
        const dt_bounds mesh = b.get();
        if (s.stop) return s;
        // Cycle s.cycle has ended: the domain at the origin prints it; one domain per
        // locality raises the iteration event (for the policies that re-partition: its
        // partitions are those of all the locality's domains); then the next cycle starts.
        const bool origin = d->col + d->row + d->plane == 0;
        if (o->progress && !o->quiet && origin)
          std::printf("cycle = %d, time = %e, dt=%e\n", s.cycle, s.time, s.dt);
        const std::uint64_t now = grain::now_ns();
        if (reports)
          grain::event("iteration", {{"duration_ns", static_cast<double>(now - *last_end)},
                                     {"step", static_cast<double>(s.cycle)},
                                     {"nx", static_cast<double>(chunk)},
                                     {"partitions", static_cast<double>(n * domains)}});
        *last_end = now;
        return start_cycle(*d, *o, mesh);
      },
      clock, reduced);
  return out;
}

run_result driver::run() {
  run_result r;
  std::uint64_t generation =
      grain::collectives::next_generation(grain::detail::collective_kind::all_reduce);
  std::unique_ptr<partitioning> parts;
  std::vector<done> previous;
  const auto t0 = std::chrono::steady_clock::now();
  last_end_ns_ = grain::now_ns();
  clock_future clock = grain::make_ready_future(start_cycle(d_, o_, dt_bounds{})).share();
  cycle_futures current;
  index_t cycle = d_.cycle;  // the cycle submitted next (its clock counts it)
  std::exception_ptr error;
  for (;;) {
    // A new partition size applies between cycles, once the cycle in flight has ended.
    const index_t chunk = schedule_.for_cycle(cycle);
    if (!parts || chunk != parts->chunk()) {
      for (auto& f : previous) f.wait();
      parts = std::make_unique<partitioning>(d_, chunk);
      inject_.set_partitions(parts->count());
      previous.assign(parts->count(), grain::make_ready_future().share());
    }
    current = submit(*parts, previous, clock, generation++, cycle++);
    clock_state s;
    try {
      s = clock.get();  // waits for the bounds of the cycle before
    } catch (...) {
      error = std::current_exception();
    }
    previous = current.material;
    if (error || s.stop) break;
    clock = current.next;
  }
  // Every task refers to the domain: let all of them end before it can go away.
  for (auto& f : current.material) f.wait();
  current.next.wait();
  if (!error) {
    try {
      all_of(current.material);
      current.next.get();
    } catch (...) {
      error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.partition = parts->chunk();
  r.partitions = parts->count();
  return r;
}

}  // namespace

run_result run_grain(domain& d, const options& o, injector& inject, partition_schedule& schedule,
                     bool reports_steps, const halo* h) {
  return driver(d, o, inject, schedule, reports_steps, h).run();
}

}  // namespace lulesh
