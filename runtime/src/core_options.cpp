// The core options (--grain:threads, --grain:pools, --grain:stack-size, ...): their table for
// --grain:help and start-up validation, and the parsers of the values that need more than a
// number.
#include "core_options.hpp"

#include <spdlog/spdlog.h>

#include <charconv>
#include <string_view>

#include "adaptive_inlining.hpp"
#include "critical_auto.hpp"

namespace grain {
namespace detail {

namespace {
constexpr std::size_t min_stack_size = std::size_t{16} << 10;
constexpr std::size_t max_stack_size = std::size_t{256} << 20;
}  // namespace

std::size_t parse_stack_size(const std::string& text) {
  std::size_t value = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || p == text.data())
    throw option_error("--grain:stack-size=" + text + ": not a size (examples: 65536, 64K, 1M)");
  std::string_view rest(p, static_cast<std::size_t>(text.data() + text.size() - p));
  unsigned shift = 0;
  if (rest == "K" || rest == "k" || rest == "KiB")
    shift = 10;
  else if (rest == "M" || rest == "m" || rest == "MiB")
    shift = 20;
  else if (!rest.empty())
    throw option_error("--grain:stack-size=" + text + ": unknown unit '" + std::string(rest) +
                       "' (use K or M)");
  // Compared before the unit is applied, so that a huge number cannot wrap into the range.
  value = value > (max_stack_size >> shift) ? max_stack_size + 1 : value << shift;
  if (value < min_stack_size || value > max_stack_size)
    throw option_error("--grain:stack-size=" + text + ": must be in [16K, 256M]");
  return value;
}

std::vector<pool_request> parse_pools(const std::string& spec, unsigned threads) {
  std::vector<pool_request> pools;
  unsigned used = 0;
  std::size_t pos = 0;
  while (!spec.empty() && pos <= spec.size()) {
    std::size_t end = spec.find(',', pos);
    std::string item = spec.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    auto colon = item.find(':');
    if (colon == std::string::npos || colon == 0)
      throw option_error("--grain:pools=" + spec + ": expected NAME:WORKERS[,NAME:WORKERS...]");
    std::string name = item.substr(0, colon);
    unsigned n = 0;
    auto text = item.substr(colon + 1);
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc() || p != text.data() + text.size() || n == 0)
      throw option_error("--grain:pools=" + spec + ": '" + text +
                         "' is not a positive worker count");
    if (name == "default")
      throw option_error(
          "--grain:pools=" + spec +
          ": 'default' is the pool of the remaining workers; name your pools otherwise");
    for (auto& q : pools)
      if (q.name == name)
        throw option_error("--grain:pools=" + spec + ": pool '" + name + "' twice");
    pools.push_back({name, n});
    used += n;
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  if (used >= threads)
    throw option_error(
        "--grain:pools=" + spec + " uses " + std::to_string(used) + " of " +
        std::to_string(threads) +
        " workers; at least one must remain for the default pool (raise --grain:threads)");
  pools.push_back({"default", threads - used});
  return pools;
}

std::vector<option_spec> all_option_specs(const std::vector<std::unique_ptr<extension>>& exts) {
  std::vector<option_spec> specs = core_option_specs();
  for (auto& e : exts)
    for (auto& s : e->option_specs()) specs.push_back(s);
  return specs;
}

// More workers than processing units only time-share the cores; far more (4096 on 2 cores)
// makes start-up alone take minutes. Above this many per processing unit it takes a flag.
unsigned checked_threads(const options& o, const topology& topo) {
  const auto pus = static_cast<long long>(topo.pus().size());
  const auto threads = static_cast<unsigned>(o.get_int("threads", pus, 1, 4096));
  if (threads <= pus) return threads;
  // Under mpirun the binding is often the surprise: say where the limit comes from.
  const std::string what =
      "--grain:threads=" + std::to_string(threads) + " on " + std::to_string(pus) +
      " processing units" +
      (topo.restricted_to_process_binding()
           ? " (the PUs this process is bound to; mpirun --bind-to none or --map-by "
             "slot:PE=N gives a rank more, --grain:ignore-process-mask uses them all)"
           : "");
  if (o.has("oversubscribe")) return threads;
  if (threads > oversubscription_limit * pus)
    throw option_error(what + ": more than " + std::to_string(detail::oversubscription_limit) +
                       " workers per processing unit only slow the program down (start-up "
                       "alone can take minutes); add --grain:oversubscribe if you mean it");
  spdlog::warn("grain: {}: workers share cores (add --grain:oversubscribe to silence this)", what);
  return threads;
}

}  // namespace detail

std::vector<option_spec> core_option_specs() {
  std::vector<option_spec> specs = {
      {"threads", "number of worker threads (default: one per processing unit)", true, false, "N"},
      {"pools", "named pools taking workers from the default pool, e.g. critical:2", true, false,
       "NAME:N[,NAME:N]"},
      {"bind",
       "thread mapping: compact, scatter, balanced, numa-balanced, numa-balanced-mtp, or none",
       true, false, "MAPPING"},
      {"ignore-process-mask",
       "use every PU of the machine, not only those the process is bound to (by mpirun, "
       "taskset, Slurm)",
       false, false, ""},
      {"stack-size",
       "user-thread stack size (default 1M, reserved; pages are committed as they are touched)",
       true, false, "BYTES[K|M]"},
      {"fences",
       "how a worker's pops of its own queue and the steals from it fence each other: adaptive "
       "(default: no fence while nobody steals), symmetric (always) or asymmetric (never; each "
       "steal pays a membarrier)",
       true, false, "MODE"},
      {"log-level", "trace, debug, info, warn, error, critical or off (default warn)", true, false,
       "LEVEL"},
      {"oversubscribe",
       "allow --grain:threads above " + std::to_string(detail::oversubscription_limit) +
           " x the processing units",
       false, false, ""},
      {"help", "print these options and exit", false, false, ""},
      {"version", "print grain's version and exit", false, false, ""},
  };
  for (auto& s : detail::inlining_option_specs()) specs.push_back(s);
  for (auto& s : detail::critical_option_specs()) specs.push_back(s);
  return specs;
}

}  // namespace grain
