// --grain:critical=auto: Jiang et al. 2020's three steps for choosing the critical tasks — the
// longest path of the task graph, the occurrences of each task kind on it, the most frequent kinds
// to the critical pool — done online instead of by hand. Every dataflow task reports its kind, its
// measured duration and its inputs when it ends (critical_record, from dataflow.hpp); the longest
// path ending at it is its duration plus the longest of its inputs'. Every window
// (--grain:critical-window, 20 ms) the path ending at the longest-path task is walked back,
// its kinds counted into frequencies that halve each window (a path of one task, no
// dependencies seen, counts nothing), and the kinds within 3/4 of the
// most frequent are published; spawn routes tasks without a pool of their own by that list.
// Paths are cut at window edges: each window counts the part of the critical path it saw.
#include "critical_auto.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

#include "grain/clock.hpp"
#include "grain/detail/critical_tracking.hpp"
#include "scheduler.hpp"

namespace grain::detail {

std::atomic<bool> g_critical_tracking{false};

namespace {

constexpr int max_kinds = 8;
constexpr double keep_share = 0.75;  // kinds within this share of the most frequent are chosen

struct node {
  const char* kind;
  std::uint64_t len;  // longest path ending here, its own duration included
  std::int64_t pred;  // the input on that path, -1 when none (or outside this window)
};

struct tracker {
  std::mutex m;
  std::unordered_map<const state_base*, std::int64_t> index;  // this window's nodes by result
  std::vector<node> nodes;
  std::uint64_t window_start = 0;
  std::uint64_t window_ns = 20'000'000;
  std::map<std::string, double> freq;          // decayed occurrences on the longest paths
  std::map<std::string, const char*> pointer;  // a name as tasks carry it
  std::string chosen;
  std::atomic<std::uint64_t> windows{0};
  int critical_pool = -1;
  int default_pool = -1;
  // What spawn reads: published kinds, lock-free (a task spawned during an update may go to
  // either pool; it runs correctly in both).
  std::atomic<int> count{0};
  std::atomic<const char*> kinds[max_kinds] = {};
};

tracker g;

void analyse(std::uint64_t now) {
  if (!g.nodes.empty()) {
    const auto longest = std::max_element(g.nodes.begin(), g.nodes.end(),
                                          [](auto& a, auto& b) { return a.len < b.len; });
    std::map<std::string, int> on_path;
    int length = 0;
    for (std::int64_t i = longest - g.nodes.begin(); i >= 0;
         i = g.nodes[static_cast<std::size_t>(i)].pred, ++length) {
      const char* k = g.nodes[static_cast<std::size_t>(i)].kind;
      if (!k) k = "?";
      ++on_path[k];
      g.pointer.emplace(k, k);
    }
    // A window whose longest path is one task saw no dependencies (independent tasks, or the
    // tail after the critical path ended): it says nothing about which kinds are critical.
    if (length < 2) on_path.clear();
    if (!on_path.empty())
      for (auto& [k, f] : g.freq) f /= 2;
    for (auto& [k, n] : on_path) g.freq[k] += n;
    double top = 0;
    for (auto& [k, f] : g.freq) top = std::max(top, f);
    std::vector<std::pair<double, std::string>> ranked;
    for (auto& [k, f] : g.freq)
      if (f >= keep_share * top && f > 0) ranked.emplace_back(-f, k);
    std::sort(ranked.begin(), ranked.end());
    if (ranked.size() > static_cast<std::size_t>(max_kinds)) ranked.resize(max_kinds);
    g.chosen.clear();
    int n = 0;
    for (auto& [f, k] : ranked) {
      g.kinds[n++].store(g.pointer[k], std::memory_order_relaxed);
      g.chosen += (g.chosen.empty() ? "" : ",") + k;
    }
    g.count.store(n, std::memory_order_release);
    if (length >= 2) g.windows.fetch_add(1, std::memory_order_relaxed);
  }
  g.nodes.clear();
  g.index.clear();
  g.window_start = now;
}

}  // namespace

void critical_record(const state_base* self, const state_base* const* in, std::size_t n,
                     const char* kind, std::uint64_t dur_ns) {
  const std::uint64_t now = now_ns();
  std::lock_guard lock(g.m);
  std::uint64_t before = 0;
  std::int64_t pred = -1;
  for (std::size_t i = 0; i < n; ++i) {
    auto it = g.index.find(in[i]);
    if (it != g.index.end() && g.nodes[static_cast<std::size_t>(it->second)].len > before) {
      before = g.nodes[static_cast<std::size_t>(it->second)].len;
      pred = it->second;
    }
  }
  g.nodes.push_back({kind, before + dur_ns, pred});
  g.index[self] = static_cast<std::int64_t>(g.nodes.size()) - 1;
  if (g.window_start == 0) g.window_start = now;
  if (now - g.window_start >= g.window_ns) analyse(now);
}

int critical_route(const char* kind) noexcept {
  const int n = g.count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    const char* k = g.kinds[i].load(std::memory_order_relaxed);
    if (k == kind || (k && kind && std::strcmp(k, kind) == 0)) return g.critical_pool;
  }
  return g.default_pool;
}

std::string critical_kinds() {
  std::lock_guard lock(g.m);
  return g.chosen;
}

std::uint64_t critical_windows() noexcept {
  return g.windows.load(std::memory_order_relaxed);
}

std::vector<option_spec> critical_option_specs() {
  return {
      {"critical",
       "auto: find the critical task kinds on the longest path of the dataflow graph and run "
       "them on the pool 'critical' (needs --grain:pools=critical:N); off (default)",
       true, false, "auto|off"},
      {"critical-window", "window of --grain:critical=auto in ms (default 20)", true, false, "MS"}};
}

void start_critical_auto(const options& o, scheduler& s) {
  const std::string mode = o.get("critical", "off");
  if (mode == "off") return;
  if (mode != "auto") throw option_error("--grain:critical=" + mode + ": must be auto or off");
  const int crit = s.pool_index("critical");
  if (crit < 0)
    throw option_error(
        "--grain:critical=auto needs a pool named critical (--grain:pools=critical:N)");
  std::uint64_t window_ms = 20;
  if (o.has("critical-window")) {
    const std::string v = o.get("critical-window");
    char* end = nullptr;
    const long x = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || x < 1 || x > 10'000)
      throw option_error("--grain:critical-window=" + v + ": must be an integer in [1, 10000] ms");
    window_ms = static_cast<std::uint64_t>(x);
  }
  std::lock_guard lock(g.m);
  g.nodes.clear();
  g.index.clear();
  g.freq.clear();
  g.chosen.clear();
  g.window_start = 0;
  g.window_ns = window_ms * 1'000'000;
  g.windows.store(0, std::memory_order_relaxed);
  g.count.store(0, std::memory_order_relaxed);
  g.critical_pool = crit;
  g.default_pool = static_cast<int>(s.default_pool().index);
  g_critical_tracking.store(true, std::memory_order_seq_cst);
}

void stop_critical_auto() {
  g_critical_tracking.store(false, std::memory_order_seq_cst);
}

}  // namespace grain::detail
