#pragma once
// Where an app's critical tasks run (Jiang et al. 2020): the task kinds named by --critical=... go
// to the pool "critical" (--critical-via=pool, Jiang et al.'s (2020) decoupled pools) or run at
// high priority in the default pool (--critical-via=priority, the alternative Jiang et al. 2020
// compares with OpenMP's task priorities); every other task goes to the default pool at normal
// priority. --critical=auto leaves the choice to the runtime (--grain:critical=auto): every
// task is launched without a pool and the runtime routes it by kind. Shared by grain-cholesky
// and grain-mergesort, header-only.
#include <algorithm>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "grain/detail/critical_tracking.hpp"
#include "grain/grain.hpp"

namespace critical {

enum class via { pool, priority };

// Pool name of the critical tasks: the one --grain:pools=critical:N creates.
inline constexpr const char* pool_name = "critical";

class routing {
 public:
  // "none" or a comma-separated list of kinds out of `known`; throws std::invalid_argument
  // naming the known kinds for anything else.
  void parse_kinds(const std::string& list, const std::vector<std::string>& known) {
    kinds_.clear();
    auto_ = list == "auto";
    if (list == "none" || auto_) return;
    std::stringstream in(list);
    std::string k;
    while (std::getline(in, k, ',')) {
      if (std::find(known.begin(), known.end(), k) == known.end()) {
        std::string all;
        for (const auto& n : known) all += (all.empty() ? "" : ",") + n;
        throw std::invalid_argument("unknown task kind '" + k + "' (known: " + all +
                                    ", or none, auto)");
      }
      kinds_.insert(k);
    }
    if (kinds_.empty()) throw std::invalid_argument("empty list of critical task kinds");
  }

  void parse_via(const std::string& v) {
    if (v == "pool")
      via_ = via::pool;
    else if (v == "priority")
      via_ = via::priority;
    else
      throw std::invalid_argument("--critical-via must be pool or priority, not '" + v + "'");
  }

  // Resolves the executors in the running runtime: with critical kinds routed to a pool, that
  // pool must exist (the executor's constructor throws, naming the pools, when it does not).
  void resolve() {
    if (auto_) {
      if (!grain::detail::critical_tracking_on())
        throw std::invalid_argument(
            "--critical=auto needs --grain:critical=auto (and --grain:pools=critical:N)");
      critical_ = other_ = grain::executor{};  // no pool: the runtime routes by kind
      return;
    }
    other_ = grain::executor("default");
    if (kinds_.empty())
      critical_ = other_;
    else if (via_ == via::pool)
      critical_ = grain::executor(pool_name);
    else
      critical_ = grain::executor("default", grain::priority::high);
  }

  bool is_critical(std::string_view kind) const { return kinds_.count(std::string(kind)) != 0; }
  const grain::executor& executor_for(std::string_view kind) const {
    return is_critical(kind) ? critical_ : other_;
  }

  // "potrf,trsm via pool", "none": how the run was set up, for the report line.
  std::string describe() const {
    if (auto_) {
      const std::string found = grain::detail::critical_kinds();
      return "auto (found " + (found.empty() ? std::string("nothing yet") : found) + ")";
    }
    if (kinds_.empty()) return "none";
    std::string s;
    for (const auto& k : kinds_) s += (s.empty() ? "" : ",") + k;
    return s + (via_ == via::pool ? " via pool" : " via priority");
  }

 private:
  std::set<std::string> kinds_;
  bool auto_ = false;
  via via_ = via::pool;
  grain::executor critical_, other_;
};

}  // namespace critical
