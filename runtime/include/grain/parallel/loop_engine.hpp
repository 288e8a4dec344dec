#pragma once
// The engine under every parallel algorithm: split [0, n) into chunks and run them on the
// workers of the caller's pool.
//
// The calling task is one of R "runners" (R <= active workers of its pool); the other R-1 are
// tasks it spawns. Each runner executes the chunks its chunker gives it (static: a fixed
// round-robin share; dynamic, guided, auto, knob: claimed from one shared atomic index;
// adaptive: claimed from the runner's home range, then from the others'), then the caller waits for
// the spawned runners through their futures: a runner nobody has stolen yet is run inline by
// the waiting caller, and waiting inside a task suspends the user thread (the worker keeps
// working), so nested loops and loops inside tasks never block a worker. Called from a thread
// that is not a worker (main), the whole loop runs as one task and that thread blocks on it.
//
// The body is body(begin, end, runner): it runs iterations [begin, end) for runner `runner` in
// [0, R) (reductions keep one partial per runner). The first exception a body throws is kept,
// no new chunk starts after it, and it is rethrown once every runner has finished.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "grain/async.hpp"
#include "grain/clock.hpp"
#include "grain/knob.hpp"
#include "grain/parallel/chunkers.hpp"
#include "grain/this_task.hpp"

namespace grain::detail {

// ---- runtime side (runtime/src/parallel_loop.cpp) ----
// Workers that may run the chunks of a loop started here: the active workers of the calling
// worker's pool. Call on a worker.
unsigned loop_workers() noexcept;
// Upper bound of loop_workers() in the running runtime (sizes per-runner partials); throws the
// no-runtime error when none runs.
unsigned loop_max_runners();
// lambda x t_o in ns for the adaptive chunker (lambda < 0: the knob loop.lambda).
double adaptive_target_ns(double lambda);
// The knob loop.lambda, and t_o: a runner re-reads lambda while it runs.
const knob& loop_lambda_knob();
double loop_overhead_ns() noexcept;
// auto: the chunk for `remaining` iterations after `timed` iterations took `elapsed_ns`.
std::size_t auto_chunk(std::uint64_t elapsed_ns, std::size_t timed, std::size_t remaining,
                       unsigned workers, std::uint64_t target_ns) noexcept;
// Publish one finished call in loop_statistics().
void record_loop(execution::chunk_kind kind, std::size_t n, std::uint64_t chunks,
                 std::size_t chunk_size) noexcept;

inline std::size_t ceil_div(std::size_t a, std::size_t b) noexcept {
  return a / b + (a % b != 0);
}

// knob: the chunk size its knob asks for now, in [1, n] (one relaxed load).
inline std::size_t knob_chunk(const knob& k, std::size_t n) noexcept {
  const double v = k.value();
  if (!(v >= 1)) return 1;  // below 1, or not a number
  return v >= static_cast<double>(n) ? n : static_cast<std::size_t>(v);
}

// Adaptive: one contiguous home range per runner, claimed from its front by its owner and,
// once their own is empty, by the other runners. A claim is then a fetch_add on a line the
// owner's core already holds (no cross-core traffic) until the end of the loop.
struct alignas(cache_line) loop_range {
  std::atomic<std::size_t> next{0};
  std::size_t end = 0;
  bool claim(std::size_t c, std::size_t& b, std::size_t& e) noexcept {
    if (next.load(std::memory_order_relaxed) >= end) return false;
    b = next.fetch_add(c, std::memory_order_relaxed);
    if (b >= end) return false;
    e = end - b > c ? b + c : end;
    return true;
  }
};

// What the runners of one loop call share. Lives on the caller's stack until every runner is
// done.
struct loop_shared {
  execution::chunk_kind kind{};
  std::size_t n = 0;
  unsigned runners = 1;
  std::size_t chunk = 1;  // static, dynamic, auto: the chunk; guided: the minimum
  std::size_t start = 0;  // first index not yet run (after auto's timing, adaptive's start)
  std::size_t cap = 1;    // adaptive: the largest chunk (one even share per worker)
  double target_ns = 0;   // adaptive: lambda x t_o
  // adaptive: loop.lambda when the call did not fix lambda (a change applies mid-loop), the
  // lambda target_ns was computed with, and t_o.
  const knob* lambda_knob = nullptr;
  double lambda = 0, overhead_ns = 0;
  const knob* size_knob = nullptr;  // knob: the chunk size

  alignas(cache_line) std::atomic<std::size_t> next{0};
  alignas(cache_line) std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> chunks_done{0};
  std::atomic<std::size_t> final_chunk{0};  // adaptive: see note_chunk
  std::mutex error_mutex;
  std::exception_ptr error;
  std::unique_ptr<loop_range[]> ranges;  // adaptive: one per runner

  void fail(std::exception_ptr e) noexcept {
    {
      std::lock_guard lk(error_mutex);
      if (!error) error = std::move(e);
    }
    stop.store(true, std::memory_order_relaxed);
  }
  bool stopped() const noexcept { return stop.load(std::memory_order_relaxed); }
  // Adaptive: the largest chunk size a runner's rule ended at (the reported chunk).
  void note_chunk(std::size_t c) noexcept {
    std::size_t cur = final_chunk.load(std::memory_order_relaxed);
    while (c > cur && !final_chunk.compare_exchange_weak(cur, c, std::memory_order_relaxed)) {
    }
  }

  // [b, e) of the next claimed chunk of c iterations; false when the loop is exhausted.
  bool claim(std::size_t c, std::size_t& b, std::size_t& e) noexcept {
    if (next.load(std::memory_order_relaxed) >= n) return false;  // no RMW once done
    b = next.fetch_add(c, std::memory_order_relaxed);
    if (b >= n) return false;
    e = n - b > c ? b + c : n;
    return true;
  }
  // Guided: max(chunk, ceil(remaining / runners)).
  bool claim_guided(std::size_t& b, std::size_t& e) noexcept {
    std::size_t cur = next.load(std::memory_order_relaxed);
    for (;;) {
      if (cur >= n) return false;
      const std::size_t rem = n - cur;
      const std::size_t c = std::min(rem, std::max(chunk, ceil_div(rem, runners)));
      if (next.compare_exchange_weak(cur, cur + c, std::memory_order_relaxed)) {
        b = cur;
        e = cur + c;
        return true;
      }
    }
  }
};

// The median of the last (up to) 5 values.
struct window_median {
  double v[5] = {};
  unsigned n = 0, next = 0;
  void add(double x) noexcept {
    v[next] = x;
    next = (next + 1) % 5;
    if (n < 5) ++n;
  }
  double median() const noexcept {
    double w[5];
    for (unsigned i = 0; i < n; ++i) {  // insertion sort of at most 5 values
      unsigned j = i;
      for (; j > 0 && w[j - 1] > v[i]; --j) w[j] = w[j - 1];
      w[j] = v[i];
    }
    return n ? w[n / 2] : 0;
  }
};

template <class Body>
void run_share(loop_shared& s, unsigned r, Body& body) noexcept {
  std::uint64_t chunks = 0;
  try {
    std::size_t b = 0, e = 0;
    switch (s.kind) {
      case execution::chunk_kind::static_: {
        // Chunks r, r + R, r + 2R, ...: the same share whoever runs this runner.
        const std::size_t step = s.chunk * s.runners;
        for (b = s.start + static_cast<std::size_t>(r) * s.chunk; b < s.n && !s.stopped();
             b += step) {
          e = s.n - b > s.chunk ? b + s.chunk : s.n;
          body(b, e, r);
          ++chunks;
          if (s.n - b <= step) break;  // b + step would pass n (or overflow)
        }
        break;
      }
      case execution::chunk_kind::dynamic:
      case execution::chunk_kind::auto_:
        while (!s.stopped() && s.claim(s.chunk, b, e)) {
          body(b, e, r);
          ++chunks;
        }
        break;
      case execution::chunk_kind::guided:
        while (!s.stopped() && s.claim_guided(b, e)) {
          body(b, e, r);
          ++chunks;
        }
        break;
      case execution::chunk_kind::knob: {
        // The knob is read at every claim, so a change reaches every chunk not yet claimed
        // (a claim that read the old value just before the change still takes the old size).
        std::size_t c = 1;
        while (!s.stopped()) {
          c = knob_chunk(*s.size_knob, s.n);
          if (!s.claim(c, b, e)) break;
          body(b, e, r);
          ++chunks;
        }
        s.final_chunk.store(c, std::memory_order_relaxed);
        break;
      }
      case execution::chunk_kind::adaptive: {
        // Size each chunk from this runner's recent iteration time (claims included):
        // c = ceil(target / t_iter), t_iter the median of the last 5 timing windows, so one
        // window stretched by a preemption does not shrink the chunks while a real change of
        // cost is followed within 3 windows. c grows at most 4x a step, so a first,
        // clock-dominated measurement of a tiny chunk cannot overshoot. The clock (~40 ns in
        // a VM) is read after every chunk while the size moves; each reading that finds it
        // steady (within 1/8) spaces the readings 4x further, up to every 16th chunk, so at a
        // few hundred ns per chunk the timing costs ~1 %.
        // A change of loop.lambda while the loop runs (a policy's) gives a new target at once:
        // the next chunk is sized from it (one relaxed load per chunk to notice).
        std::size_t c = 1;
        std::uint64_t pending = 0;
        unsigned since = 0, every = 1;
        window_median recent;
        double target_ns = s.target_ns, lambda = s.lambda;
        std::uint64_t t0 = now_ns();
        for (unsigned k = 0; k < s.runners && !s.stopped(); ++k) {  // own range, then the others'
          loop_range& g = s.ranges[(r + k) % s.runners];
          while (!s.stopped() && g.claim(c, b, e)) {
            body(b, e, r);
            ++chunks;
            pending += e - b;
            if (s.lambda_knob && s.lambda_knob->value() != lambda) {
              lambda = s.lambda_knob->value();
              target_ns = lambda * s.overhead_ns;
              since = every;  // size the next chunk now
            }
            if (++since < every) continue;
            since = 0;
            const std::uint64_t t1 = now_ns();
            recent.add(static_cast<double>(t1 - t0) / static_cast<double>(pending));
            pending = 0;
            t0 = t1;
            const double t_iter = recent.median();
            const double want = t_iter > 0 ? target_ns / t_iter : static_cast<double>(s.cap);
            const std::size_t grow = std::min(s.cap, c * 4);
            const std::size_t next =
                want >= static_cast<double>(grow)
                    ? grow
                    : std::max<std::size_t>(1, static_cast<std::size_t>(want + 0.999));
            const std::size_t diff = next > c ? next - c : c - next;
            every = diff <= c / 8 ? std::min(every * 4, 16u) : 1;
            c = next;
          }
        }
        s.note_chunk(c);
        break;
      }
    }
  } catch (...) {
    s.fail(std::current_exception());
  }
  s.chunks_done.fetch_add(chunks, std::memory_order_relaxed);
}

// Plan the call, run the caller's share, wait for the others; on a worker.
template <class Body>
void run_loop_here(const execution::chunker& ch, std::size_t n, Body& body) {
  loop_shared s;
  s.kind = ch.kind;
  s.n = n;
  const unsigned P = std::max(1u, loop_workers());
  std::size_t reported = 0;
  switch (ch.kind) {
    case execution::chunk_kind::static_:
      s.chunk = ch.size ? ch.size : ceil_div(n, P);
      s.runners = static_cast<unsigned>(std::min<std::size_t>(P, ceil_div(n, s.chunk)));
      reported = s.chunk;
      break;
    case execution::chunk_kind::dynamic:
      s.chunk = std::max<std::size_t>(1, ch.size);
      s.runners = static_cast<unsigned>(std::min<std::size_t>(P, ceil_div(n, s.chunk)));
      reported = s.chunk;
      break;
    case execution::chunk_kind::guided:
      s.chunk = std::max<std::size_t>(1, ch.size);
      s.runners = static_cast<unsigned>(std::min<std::size_t>(P, ceil_div(n, s.chunk)));
      reported = std::min(n, std::max(s.chunk, ceil_div(n, s.runners)));
      break;
    case execution::chunk_kind::knob:
      s.size_knob = ch.size_knob;
      s.runners = static_cast<unsigned>(
          std::min<std::size_t>(P, ceil_div(n, knob_chunk(*ch.size_knob, n))));
      break;
    case execution::chunk_kind::auto_: {
      const std::size_t timed = ch.size ? std::min(ch.size, n) : n / 100;
      std::uint64_t elapsed = 0;
      if (timed > 0) {
        const std::uint64_t t0 = now_ns();
        try {
          body(std::size_t{0}, timed, 0u);
        } catch (...) {
          s.fail(std::current_exception());
        }
        elapsed = now_ns() - t0;
        s.chunks_done.store(1, std::memory_order_relaxed);
      }
      s.start = timed;
      s.chunk = auto_chunk(elapsed, timed, n - timed, P, ch.target_ns);
      s.runners =
          n == timed
              ? 1u
              : static_cast<unsigned>(std::min<std::size_t>(P, ceil_div(n - timed, s.chunk)));
      reported = s.chunk;
      break;
    }
    case execution::chunk_kind::adaptive: {
      if (ch.lambda < 0) {  // loop.lambda: the runners follow a change of it (run_share)
        s.lambda_knob = &loop_lambda_knob();
        s.lambda = s.lambda_knob->value();
        s.overhead_ns = loop_overhead_ns();
        s.target_ns = s.lambda * s.overhead_ns;
      } else {
        s.target_ns = adaptive_target_ns(ch.lambda);
      }
      // The caller first runs iterations itself, 1, 2, 4, ... at a time, until they have taken
      // the target time: a loop that ends before that was not worth a task (the same rule as
      // adaptive inlining), and one that does not costs at most about 2 targets of serial work.
      std::size_t done = 0;
      const std::uint64_t t0 = now_ns();
      try {
        for (std::size_t step = 1; done < n; step *= 2) {
          const std::size_t e = n - done > step ? done + step : n;
          body(done, e, 0u);
          done = e;
          if (static_cast<double>(now_ns() - t0) >= s.target_ns) break;
        }
      } catch (...) {
        s.fail(std::current_exception());
      }
      s.chunks_done.store(1, std::memory_order_relaxed);
      s.start = done;
      const std::size_t rest = n - done;
      s.cap = ceil_div(n, P);
      s.runners = static_cast<unsigned>(std::min<std::size_t>(P, std::max<std::size_t>(1, rest)));
      s.ranges = std::make_unique<loop_range[]>(s.runners);
      for (unsigned k = 0; k < s.runners; ++k) {  // even split of the rest, the first ones longer
        const std::size_t q = rest / s.runners, m = rest % s.runners;
        s.ranges[k].next.store(done + q * k + std::min<std::size_t>(k, m),
                               std::memory_order_relaxed);
        s.ranges[k].end = done + q * (k + 1) + std::min<std::size_t>(k + 1, m);
      }
      if (rest == 0) s.note_chunk(n);  // the whole loop ran in the caller: one chunk
      break;
    }
  }
  s.next.store(s.start, std::memory_order_relaxed);

  if (!s.stopped()) {
    std::vector<future<void>> others;
    try {
      others.reserve(s.runners - 1);
      for (unsigned r = 1; r < s.runners; ++r)
        others.push_back(grain::async(launch::async, [&s, &body, r] { run_share(s, r, body); }));
    } catch (...) {
      // Could not spawn (out of memory): the runners already spawned still use s and body,
      // so they stop at their next chunk and are waited for before the error leaves.
      s.fail(std::current_exception());
    }
    run_share(s, 0, body);
    // Newest first: an unstolen runner is at the bottom of this worker's queue, where waiting
    // on it runs it inline.
    for (auto it = others.rbegin(); it != others.rend(); ++it) it->wait();
  }

  if (ch.kind == execution::chunk_kind::adaptive || ch.kind == execution::chunk_kind::knob)
    reported = std::max<std::size_t>(1, s.final_chunk.load(std::memory_order_relaxed));
  record_loop(ch.kind, n, s.chunks_done.load(std::memory_order_relaxed), reported);
  if (s.error) std::rethrow_exception(s.error);
}

// Run body over [0, n) with chunker ch: from a worker directly, from any other thread as one
// task that this thread waits for.
template <class Body>
void run_loop(const execution::chunker& ch, std::size_t n, Body& body) {
  if (n == 0) return;
  if (this_task::worker_index() >= 0) {
    run_loop_here(ch, n, body);
    return;
  }
  if (!runtime_running()) throw_no_runtime();
  // The body's exception comes back in a local, not through the future: then this thread holds
  // the last reference to it once get() returned (no release left on a worker).
  std::exception_ptr error;
  grain::async(launch::async, [&] {
    try {
      run_loop_here(ch, n, body);
    } catch (...) {
      error = std::current_exception();
    }
  }).get();
  if (error) std::rethrow_exception(error);
}

}  // namespace grain::detail
