// launch::adaptive: inline a task when its kind is predicted to take less than
// inline.lambda x t_o, spawn it otherwise (docs/inlining.md).
//
// The model: one process-wide, fixed-size table of (kind, depth) -> EWMA of the task's
// inclusive duration. kind is the task's name pointer (annotation or callable type, unique per
// type); depth is the launch::adaptive nesting depth, so a recursive kind (fib(30) and fib(3)
// share a kind) gets one estimate per level and the cut-off lands on the right level.
// Spawned tasks are always timed (they may finish on another thread than the one that decided,
// hence one shared table); inlined ones with probability 1/32, so a kind whose
// duration changes is re-decided. Unknown keys spawn and get measured.
//
// Hot path: a decision reads the table (shared, read-mostly cache lines) and a thread-local
// random state; no lock, no allocation, no system call. Writes happen only when a duration is
// recorded: relaxed stores, no read-modify-write except claiming an empty slot. Two threads
// recording the same key at once may lose one sample: harmless for an estimate.
#include "adaptive_inlining.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include "grain/async.hpp"
#include "grain/clock.hpp"
#include "grain/detail/task_overhead.hpp"
#include "grain/knob.hpp"
#include "hooks_internal.hpp"
#include "scheduler.hpp"
#include "task_overhead.hpp"

namespace grain::detail {
namespace {

constexpr unsigned table_size = 4096;        // entries (power of two), 64 KiB, zero-initialised
constexpr unsigned probe_limit = 4;          // linear probing; beyond it the home slot is evicted
constexpr std::uint64_t resample_mask = 31;  // time an inlined call with probability 1/32
constexpr float ewma_weight = 0.25f;         // weight of a new sample

struct kind_entry {
  std::atomic<std::uint64_t> key{0};      // kind pointer << 16 | depth; 0: empty
  std::atomic<float> estimate_ns{0};      // EWMA of the inclusive duration
  std::atomic<std::uint32_t> samples{0};  // 0: not measured yet
};

kind_entry g_table[table_size];

thread_local std::uint64_t tls_rng = 0x9E3779B97F4A7C15ull;  // constant-initialised: no guard

inline std::uint64_t make_key(const char* kind, std::uint32_t depth) noexcept {
  // User-space pointers fit in 48 bits; a null kind still gets a non-zero key via depth + 1.
  return (static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(kind)) << 16) |
         ((depth + 1) & 0xFFFFu);
}

// The entry of `key`, claiming an empty or (when the neighbourhood is full) the home slot.
kind_entry& lookup(std::uint64_t key) noexcept {
  const unsigned home = static_cast<unsigned>((key * 0x9E3779B97F4A7C15ull) >> 52);
  for (unsigned i = 0; i < probe_limit; ++i) {
    kind_entry& e = g_table[(home + i) & (table_size - 1)];
    std::uint64_t k = e.key.load(std::memory_order_relaxed);
    if (k == key) return e;
    if (k == 0) {
      if (e.key.compare_exchange_strong(k, key, std::memory_order_relaxed) || k == key) return e;
    }
  }
  kind_entry& e = g_table[home];  // evict: the newcomer starts unmeasured
  e.samples.store(0, std::memory_order_relaxed);
  e.key.store(key, std::memory_order_relaxed);
  return e;
}

std::atomic<knob*> g_lambda{nullptr};
launch g_saved_policy = launch::async;
bool g_policy_overridden = false;

// inline.lambda: from the scripts/sweep-inline sweep on the 2-vCPU development machine. Since
// inlined calls hold their result without a shared state and a starving worker gets spawns
// (starving_thieves), fib(32) is flat within 1.06x from 16 to 1000 and fine-grained UTS gains
// up to 256-1000; 64 is within 1.06x of the best on both. It transfers because it is a ratio
// of two times that scale together (docs/inlining.md).
// loop.lambda: a chunk at least 10 t_o long keeps the scheduling cost per chunk under 10 %.
constexpr double inline_lambda_default = 64;
constexpr double loop_lambda_default = 10;

double parse_task_overhead(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v > 0) || v > 1e9)
    throw option_error("--grain:task-overhead=" + text +
                       ": expected a task overhead in nanoseconds, a number in (0, 1e9]");
  return v;
}

// Lazy splitting (Tzannes et al., "Lazy Binary-Splitting"): an inlined call cannot be split
// any more, so a worker whose queue holds nothing to steal, while another worker sleeps for
// want of work, spawns even a short task. Without it, a kind whose estimate is a mean over
// very unequal calls (the depth of an unbalanced tree) can inline a large one on the only busy
// worker and leave the others idle to the end (fib(32), 2 workers: 1 steal in a whole run and
// 15 % longer at inline.lambda >= 32).
bool starving_thieves(const worker& w) noexcept {
  if (w.home->sleepers.load(std::memory_order_relaxed) == 0) return false;
  for (const auto& q : w.staged)
    if (!q.empty()) return false;
  return true;
}

}  // namespace

adaptive_choice adaptive_decide(adaptive_frame& fr) noexcept {
  worker* w = current_worker();
  task_base* parent = w ? w->current_task : nullptr;
  const std::uint32_t depth = parent ? std::min<std::uint32_t>(parent->depth + 1u, 0xFFFEu) : 0u;
  fr.depth = static_cast<std::uint16_t>(depth);
  kind_entry& e = lookup(make_key(fr.info.name, depth));
  if (e.samples.load(std::memory_order_acquire) == 0) return adaptive_choice::spawn_timed;
  const knob* lambda = g_lambda.load(std::memory_order_relaxed);
  const double threshold = lambda ? lambda->value() * task_overhead_ns() : 0.0;
  if (e.estimate_ns.load(std::memory_order_relaxed) >= threshold)
    return adaptive_choice::spawn_timed;
  if (w && starving_thieves(*w)) return adaptive_choice::spawn_timed;
  std::uint64_t& r = tls_rng;  // xorshift64
  r ^= r << 13;
  r ^= r >> 7;
  r ^= r << 17;
  const adaptive_choice choice =
      (r & resample_mask) == 0 ? adaptive_choice::inline_timed : adaptive_choice::inline_untimed;
  // Enter the frame: it is the running task until adaptive_leave (as run_inline does).
  if (w) {
    fr.info.guid = (static_cast<std::uint64_t>(w->id + 1) << 40) | ++w->guid_counter;
    fr.info.parent_guid = parent ? parent->info.guid : 0;
    fr.prio = parent ? parent->prio : priority::normal;
    fr.saved = parent;
    fr.inline_subtree = true;
    w->current_task = &fr;
    w->stats->phases.inc();
    if (auto h = hook(&runtime_hooks::phase_begin)) h(w->id, fr.info, now_ns());
  }
  return choice;
}

bool adaptive_in_inlined_call() noexcept {
  worker* w = current_worker();
  const task_base* parent = w ? w->current_task : nullptr;
  if (!parent || !parent->inline_subtree) return false;
  w->stats->tasks.inc();
  w->stats->inline_tasks.inc();
  return true;
}

void adaptive_leave(adaptive_frame& fr) noexcept {
  worker* w = current_worker();              // the call may have suspended and resumed elsewhere
  if (!w || w->current_task != &fr) return;  // not entered (called outside the runtime)
  w->current_task = fr.saved;
  w->stats->tasks.inc();
  w->stats->inline_tasks.inc();
  if (auto h = hook(&runtime_hooks::phase_end)) h(w->id, fr.info, true, now_ns());
}

void adaptive_record(const task_base* t, std::uint64_t ns) noexcept {
  kind_entry& e = lookup(make_key(t->info.name, t->depth));
  const auto sample = static_cast<float>(ns);
  const std::uint32_t n = e.samples.load(std::memory_order_relaxed);
  const float old = e.estimate_ns.load(std::memory_order_relaxed);
  e.estimate_ns.store(n == 0 ? sample : old + ewma_weight * (sample - old),
                      std::memory_order_relaxed);
  if (n < 0xFFFFFFFFu) e.samples.store(n + 1, std::memory_order_release);
}

std::vector<option_spec> inlining_option_specs() {
  return {
      {"inline",
       "what grain::async without a launch policy does: adaptive (inline tasks predicted "
       "shorter than inline.lambda x t_o) or async (always a new task; the default)",
       true, false, "adaptive|async"},
      {"task-overhead",
       "t_o in ns for adaptive inlining and chunking, instead of measuring it at start-up", true,
       false, "NS"},
  };
}

void start_inlining(const options& o, const topology& topo, std::size_t stack_size) {
  // Each runtime learns afresh (no worker runs yet, so plain relaxed stores suffice).
  for (kind_entry& e : g_table) {
    e.key.store(0, std::memory_order_relaxed);
    e.samples.store(0, std::memory_order_relaxed);
    e.estimate_ns.store(0, std::memory_order_relaxed);
  }
  knob& inl = knobs().define_double(
      "inline.lambda", 0, 1000, inline_lambda_default,
      "launch::adaptive inlines a task whose kind is predicted to take < lambda x t_o "
      "(0: never inline; see docs/inlining.md)");
  inl.reset_range(0, 1000, inline_lambda_default);
  g_lambda.store(&inl, std::memory_order_relaxed);
  knob& loop = knobs().define_double(
      "loop.lambda", 0, 1000, loop_lambda_default,
      "adaptive chunking: chunk time >= lambda x t_o (overhead per chunk <= 1/lambda)");
  loop.reset_range(0, 1000, loop_lambda_default);

  if (o.has("inline")) {
    const std::string v = o.get("inline");
    const std::optional<launch> named = launch_from_name(v);
    if (named != launch::adaptive && named != launch::async)
      throw option_error("--grain:inline=" + v + ": valid values are adaptive and async");
    const launch l = *named;
    g_saved_policy = default_policy();
    g_policy_overridden = true;
    set_default_policy(l);
  }
  // Measured once per process: t_o is a property of the machine, not of one runtime.
  static double measured_ns = 0;
  if (o.has("task-overhead")) {
    set_task_overhead_ns(parse_task_overhead(o.get("task-overhead")));
  } else {
    if (measured_ns == 0) measured_ns = measure_task_overhead_ns(topo, stack_size);
    set_task_overhead_ns(measured_ns);
  }
}

void stop_inlining() noexcept {
  if (g_policy_overridden) set_default_policy(g_saved_policy);
  g_policy_overridden = false;
}

}  // namespace grain::detail
