#pragma once
// Load injection (Wickramasinghe et al. 2017 §V-A): a fixed work quantum t_u that spins (compute,
// not sleep), and per task and iteration an amount of it drawn from a distribution — uniform [a,
// b], scaled (one assignment of the iteration gets 1 + s units, the others 1), gaussian (mu,
// sigma), poisson (mean) or exponential (mean) — applied to a chosen fraction of tasks or of
// ranks (the others get exactly one unit). A draw depends only on (seed, iteration, rank,
// task), never on the order tasks run in, so every variant of an application (grain,
// MPI+OpenMP, MPI only) gets the same amounts. Shared by the applications that inject load
// (grain-collectives-bench, grain-lulesh): one library, not a copy per application.
// Runtime-free: no grain, MPI or OpenMP here.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace load_injection {

enum class distribution { uniform, scaled, gaussian, poisson, exponential };
std::optional<distribution> distribution_from_name(std::string_view name);
const char* distribution_name(distribution d);

struct load_spec {
  distribution dist = distribution::uniform;
  // In units of the quantum: uniform [a, b]; scaled s = a; gaussian mu = a, sigma = b;
  // poisson and exponential mean = a. Defaults: every task one unit.
  double a = 1, b = 1;
  double unit_us = 1000;  // t_u
  double fraction = 1;    // of tasks (or of ranks) whose amount is drawn
  bool per_rank = false;  // the fraction picks ranks (all tasks of a picked rank are drawn)
  std::uint64_t seed = 1;
  // The whole job's shape, for `scaled` (which one assignment of the iteration is scaled).
  std::uint32_t ranks = 1, tasks_per_rank = 1;
};

// Throws std::invalid_argument naming the parameter when the spec makes no sense (negative
// amounts, b < a for uniform, fraction outside [0, 1], ...).
void check(const load_spec& s);

// The amount of work of task `task` of rank `rank` in iteration `iteration`, in units of t_u
// (>= 0).
double units(const load_spec& s, std::uint64_t iteration, std::uint32_t rank, std::uint32_t task);

// Spins for `us` microseconds' worth of calibrated computation; returns a value the compiler
// cannot drop.
std::uint64_t spin_us(double us);
// Loop iterations per microsecond of spin_us: measured (calibrate) or given (set), so that
// separate processes of one comparison do the same work per unit.
double calibrate();
void set_iterations_per_us(double v);
double iterations_per_us();

}  // namespace load_injection
