// The dashboard extension: --grain:dashboard=PORT and --grain:dashboard-counters. A dashboard
// that cannot start (a port out of range or in use, a bad pattern) says why and the program
// runs on without it: watching a run must never be the reason it is lost.
#include "grain/dashboard/extension.hpp"

#include <errno.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "grain/clock.hpp"
#include "grain/ext/runtime_core.hpp"
#include "grain/instrumentation/counters.hpp"
#include "grain/instrumentation/listener.hpp"
#include "grain/knob.hpp"
#include "server.hpp"
#include "store.hpp"

namespace grain::dashboard {
namespace {

std::atomic<int> g_port{0};

// The counters a page shows without --grain:dashboard-counters: the ones the trace records
// by default (docs/tracing.md) — idle rate, task duration and overhead, the pending queue,
// tasks per second. The knobs are always shown.
const std::vector<std::string>& default_counters() {
  static const std::vector<std::string> d = {
      "/threads/idle-rate",
      "/threads/time/average",
      "/threads/time/average-overhead",
      "/threads/queue-length/pending",
      "/threads/count/cumulative",
  };
  return d;
}

// PORT as 0..65535, or why not.
std::optional<int> parse_port(const std::string& text, std::string& why) {
  int port = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || port < 0 ||
      port > 65535) {
    why = "--grain:dashboard=" + text +
          ": the port is an integer in 0..65535 (0: one the system chooses)";
    return std::nullopt;
  }
  return port;
}

class dashboard_extension final : public extension {
 public:
  std::string name() const override { return "dashboard"; }

  std::vector<option_spec> option_specs() const override {
    return {
        {"dashboard",
         "serve a live page of counters, knobs and decisions on http://127.0.0.1:PORT/ "
         "(0: a free port, printed at start)",
         true, false, "PORT"},
        {"dashboard-counters",
         "counters the page plots ('*' wildcards; repeatable; default: idle rate, task "
         "duration and overhead, pending queue, tasks per second)",
         true, true, "NAME"},
    };
  }

  void configure(const options& o, runtime_core& rt) override {
    if (!o.has("dashboard")) {
      if (o.has("dashboard-counters"))
        spdlog::warn("grain: --grain:dashboard-counters without --grain:dashboard has no effect");
      return;
    }
    std::string why;
    const auto port = parse_port(o.get("dashboard"), why);
    if (!port) {
      spdlog::error("grain: {}; the program runs without the dashboard", why);
      return;
    }
    std::vector<instrumentation::counter_pattern> patterns;
    auto names = o.get_all("dashboard-counters");
    if (names.empty()) names = default_counters();
    for (const auto& n : names) {
      try {
        patterns.emplace_back(n);
      } catch (const std::invalid_argument& e) {
        spdlog::error("grain: --grain:dashboard-counters={}: {}; the page leaves it out", n,
                      e.what());
      }
    }
    // The sums the idle rate, t_d and t_o are made of: the page plots those per sampling
    // interval, not as the averages since the start the counters report.
    std::vector<instrumentation::counter_pattern> helpers;
    for (const auto& n : names)
      for (const char* avg : {"/idle-rate", "/time/average", "/time/average-overhead"})
        if (n.size() > std::strlen(avg) && n.ends_with(avg))
          for (const char* sum : {"/time/cumulative", "/time/overall", "/count/cumulative"}) {
            try {
              helpers.emplace_back(n.substr(0, n.size() - std::strlen(avg)) + sum);
            } catch (const std::invalid_argument&) {
            }
          }
    detail::run_info info;
    const char* prog = program_invocation_short_name;
    info.program = (prog && *prog) ? prog : "grain";
    info.locality = rt.locality();
    info.workers = rt.num_workers();
    info.sample_interval_ms =
        static_cast<std::uint64_t>(o.get_int("sample-interval", 10, 0, 3'600'000));
    if (info.sample_interval_ms == 0)
      spdlog::warn(
          "grain: --grain:sample-interval=0 takes no samples while the program runs: the "
          "dashboard shows decisions only");
    info.start_ns = rt.start_time_ns();
    store_ = std::make_unique<detail::store>(std::move(patterns), std::move(info), 6000, 1000,
                                             std::move(helpers));
    server_ = std::make_unique<detail::server>(*store_);
    if (std::string err = server_->bind(*port); !err.empty()) {
      spdlog::error("grain: --grain:dashboard={}: {}; the program runs without the dashboard",
                    *port, err);
      server_.reset();
      store_.reset();
      return;
    }
  }

  void start(runtime_core&) override {
    if (!server_) return;
    instrumentation::add_listener(store_.get());
    decision_listener_ =
        knobs().add_listener([s = store_.get()](const decision_record& r) { s->on_decision(r); });
    auto& reg = instrumentation::registry();
    const std::string inst = "/dashboard{" + instrumentation::here_instance() + "}/";
    counter_ids_.push_back(reg.add_counter(
        {inst + "time/cpu", "ns",
         "CPU time of the dashboard: its HTTP threads and its share of the sampler thread",
         instrumentation::counter_kind::monotonic},
        [this] { return static_cast<double>(cpu_ns()); }));
    counter_ids_.push_back(
        reg.add_counter({inst + "count/requests", "count", "HTTP requests the dashboard answered",
                         instrumentation::counter_kind::monotonic},
                        [this] { return static_cast<double>(server_->requests()); }));
    server_->start();
    start_ns_ = now_ns();
    started_ = true;
    g_port.store(server_->port());
    // Always printed (the log level is warn by default): with PORT 0 it is the only way to
    // know where the page is.
    std::fprintf(stderr, "grain: dashboard on http://127.0.0.1:%d/\n", server_->port());
  }

  void stop(runtime_core&) override { shut(); }
  void emergency_stop(runtime_core&) override { shut(); }
  ~dashboard_extension() override { shut(); }

 private:
  std::uint64_t cpu_ns() const { return server_->cpu_ns() + store_->cpu_ns(); }

  void shut() {
    if (!server_ || stopped_.exchange(true)) return;
    store_->set_ended();
    instrumentation::remove_listener(store_.get());
    knobs().remove_listener(decision_listener_);
    for (int id : counter_ids_) instrumentation::registry().remove(id);
    counter_ids_.clear();
    server_->stop();
    g_port.store(0);
    if (!started_) return;
    const double wall = static_cast<double>(now_ns() - start_ns_) * 1e-9;
    const double cpu = static_cast<double>(cpu_ns()) * 1e-9;
    spdlog::info(
        "grain: dashboard answered {} requests in {:.2f} s, using {:.3f} s of CPU ({:.3f} % of "
        "a core)",
        server_->requests(), wall, cpu, wall > 0 ? 100.0 * cpu / wall : 0.0);
  }

  std::unique_ptr<detail::store> store_;
  std::unique_ptr<detail::server> server_;
  int decision_listener_ = -1;
  std::vector<int> counter_ids_;
  std::uint64_t start_ns_ = 0;
  std::atomic<bool> stopped_{false};
  bool started_ = false;
};

}  // namespace

std::unique_ptr<grain::extension> make_extension() {
  return std::make_unique<dashboard_extension>();
}

int bound_port() noexcept {
  return g_port.load();
}

}  // namespace grain::dashboard
