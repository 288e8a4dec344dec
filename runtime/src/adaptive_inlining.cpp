// launch::adaptive: inline a task when its kind is predicted to take less than
// inline.lambda x t_o, spawn it otherwise (docs/inlining.md).
//
// The model: per thread, a fixed-size table of (kind, depth) -> EWMA of the task's inclusive
// duration. kind is the task's name pointer (annotation or callable type, unique per type);
// depth is the launch::adaptive nesting depth, so a recursive kind (fib(30) and fib(3) share a
// kind) gets one estimate per level and the cut-off lands on the right level. Spawned tasks
// are always timed; inlined ones one call in `resample_period`, so a kind whose duration
// changes is re-decided. Unknown keys spawn (and get measured). The table is per thread: no
// lock, no atomic read-modify-write, no allocation after a thread's first adaptive launch.
#include "adaptive_inlining.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "grain/async.hpp"
#include "grain/detail/task_overhead.hpp"
#include "grain/knob.hpp"
#include "scheduler.hpp"
#include "task_overhead.hpp"

namespace grain::detail {
namespace {

constexpr unsigned table_size = 1024;          // entries per thread (power of two), 16 KiB
constexpr unsigned probe_limit = 4;            // linear probing; beyond it the home slot is evicted
constexpr std::uint32_t resample_period = 32;  // time 1 inlined call in 32
constexpr float ewma_weight = 0.25f;           // weight of a new sample

struct kind_entry {
  const char* kind = nullptr;
  std::uint32_t depth = 0;
  std::uint32_t calls = 0;    // inlined calls since the last timed one (resampling)
  float estimate_ns = 0;      // EWMA of the inclusive duration
  std::uint32_t samples = 0;  // 0: unknown key
};

struct kind_table {
  kind_entry entries[table_size];
};

// Raw pointer for the hot path (trivial TLS, no init guard); the owner frees it at thread exit.
thread_local kind_table* tls_table = nullptr;
struct table_owner {
  ~table_owner() {
    delete tls_table;
    tls_table = nullptr;
  }
};
thread_local table_owner tls_owner;

std::atomic<knob*> g_lambda{nullptr};
launch g_saved_policy = launch::async;
bool g_policy_overridden = false;

// Defaults, calibrated on the 2-vCPU development machine with scripts/sweep-inline and kept
// because lambda is a ratio of two times that scale together (docs/inlining.md).
constexpr double inline_lambda_default = 2;
constexpr double loop_lambda_default = 10;

GRAIN_NOINLINE kind_table& make_table() {
  (void)&tls_owner;  // odr-use: registers the destructor for this thread
  tls_table = new kind_table();
  return *tls_table;
}

inline kind_table& table() {
  kind_table* t = tls_table;
  return GRAIN_LIKELY(t != nullptr) ? *t : make_table();
}

inline kind_entry& lookup(const char* kind, std::uint32_t depth) noexcept {
  kind_table& t = table();
  const std::uint64_t h = (reinterpret_cast<std::uintptr_t>(kind) ^ (std::uint64_t{depth} << 48)) *
                          0x9E3779B97F4A7C15ull;
  const unsigned home = static_cast<unsigned>(h >> 54) & (table_size - 1);
  for (unsigned i = 0; i < probe_limit; ++i) {
    kind_entry& e = t.entries[(home + i) & (table_size - 1)];
    if (e.kind == kind && e.depth == depth) return e;
    if (e.kind == nullptr) {
      e.kind = kind;
      e.depth = depth;
      return e;
    }
  }
  kind_entry& e = t.entries[home];  // full neighbourhood: the newcomer takes the home slot
  e = kind_entry{};
  e.kind = kind;
  e.depth = depth;
  return e;
}

double parse_task_overhead(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v > 0) || v > 1e9)
    throw option_error("--grain:task-overhead=" + text +
                       ": expected a task overhead in nanoseconds, a number in (0, 1e9]");
  return v;
}

}  // namespace

adaptive_choice adaptive_decide(task_base* t) noexcept {
  worker* w = current_worker();
  const task_base* parent = w ? w->current_task : nullptr;
  const std::uint32_t depth = parent ? std::min<std::uint32_t>(parent->depth + 1u, 0xFFFFu) : 0u;
  t->depth = static_cast<std::uint16_t>(depth);
  kind_entry& e = lookup(t->info.name, depth);
  if (e.samples == 0) return adaptive_choice::spawn_timed;
  const knob* lambda = g_lambda.load(std::memory_order_relaxed);
  const double threshold = lambda ? lambda->value() * task_overhead_ns() : 0.0;
  if (e.estimate_ns >= threshold) return adaptive_choice::spawn_timed;
  if (++e.calls < resample_period) return adaptive_choice::inline_untimed;
  e.calls = 0;
  return adaptive_choice::inline_timed;
}

void adaptive_record(const task_base* t, std::uint64_t ns) noexcept {
  kind_entry& e = lookup(t->info.name, t->depth);
  const auto sample = static_cast<float>(ns);
  e.estimate_ns = e.samples == 0 ? sample : e.estimate_ns + ewma_weight * (sample - e.estimate_ns);
  if (e.samples < 0xFFFFFFFFu) ++e.samples;
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
    launch l;
    if (v == "adaptive")
      l = launch::adaptive;
    else if (v == "async")
      l = launch::async;
    else
      throw option_error("--grain:inline=" + v + ": valid values are adaptive and async");
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
