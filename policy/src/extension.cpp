// The policy extension: options, the engine's lifetime, command-line knobs, the decision log.
#include "grain/policy/extension.hpp"

#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdio>

#include "grain/ext/runtime_core.hpp"
#include "grain/policy/engine.hpp"
#include "policy_internal.hpp"

namespace grain::policy {
namespace {

std::atomic<engine*> g_engine{nullptr};

std::string fmt_value(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    std::size_t end = s.find(sep, pos);
    std::string item = s.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    if (!item.empty()) out.push_back(item);
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return out;
}

void log_decision(const decision_record& r) {
  if (!spdlog::should_log(spdlog::level::info)) return;
  knob* k = knobs().find(r.knob);
  auto text = [&](double v) { return k ? k->format(v) : fmt_value(v); };
  std::string trig;
  for (auto& [n, v] : r.trigger) trig += (trig.empty() ? "" : ", ") + n + "=" + fmt_value(v);
  spdlog::info("grain: decision [{}] {} {} -> {}{}{}{}", r.rule, r.knob, text(r.old_value),
               text(r.new_value),
               r.clamped ? " (clamped from " + fmt_value(r.requested) + ")" : std::string(),
               r.reason.empty() ? std::string() : " reason: " + r.reason,
               trig.empty() ? std::string() : "; trigger: " + trig);
}

void list_knobs() {
  auto all = knobs().all();
  std::size_t wn = 4, wr = 5, wd = 7;
  for (knob* k : all) {
    wn = std::max(wn, k->name().size());
    wr = std::max(wr, k->describe_range().size());
    wd = std::max(wd, k->format(k->default_value()).size());
  }
  std::printf("%-*s  %-*s  %-*s  %s\n", static_cast<int>(wn), "name", static_cast<int>(wr), "range",
              static_cast<int>(wd), "default", "description");
  for (knob* k : all)
    std::printf("%-*s  %-*s  %-*s  %s\n", static_cast<int>(wn), k->name().c_str(),
                static_cast<int>(wr), k->describe_range().c_str(), static_cast<int>(wd),
                k->format(k->default_value()).c_str(), k->description().c_str());
  std::printf(
      "\nSet one at start-up with --grain:knob=NAME=VALUE; knobs an application defines "
      "appear once it defines them.\n");
  std::fflush(stdout);
}

class policy_extension final : public extension {
 public:
  std::string name() const override { return "policy"; }

  std::vector<option_spec> option_specs() const override {
    return {
        {"policy", "load a Lua policy FILE (repeatable; see docs/lua-api.md)", true, true, "FILE"},
        {"policy-budget", "Lua instructions per policy rule call (default 1000000)", true, false,
         "N"},
        {"policy-memory", "memory cap of the Lua policy state in MB (default 64)", true, false,
         "MB"},
        {"policy-time-limit",
         "wall-clock limit of one policy rule call in ms (default 1000); a rule past it is "
         "disabled",
         true, false, "MS"},
        {"knob", "set a knob at start-up (repeatable), e.g. pool.default.workers=2", true, true,
         "NAME=VALUE"},
        {"list-knobs", "list every knob with its type, range, default and description, then exit",
         false, false, ""},
    };
  }

  void configure(const options& o, runtime_core& rt) override {
    // inline.lambda and loop.lambda are defined by the runtime before extensions configure.
    for (const std::string& kv : o.get_all("knob")) {
      auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0)
        throw option_error("--grain:knob=" + kv + ": use --grain:knob=NAME=VALUE");
      try {
        knobs().set_initial(kv.substr(0, eq), kv.substr(eq + 1), "cli");
      } catch (const std::exception& e) {
        throw option_error("--grain:knob=" + kv + ": " + e.what());
      }
    }
    check_pending_knobs();
    if (o.has("list-knobs")) {
      list_knobs();
      knobs().clear_initial();
      throw startup_exit{0};
    }

    engine_options eo;
    eo.instruction_budget =
        static_cast<std::uint64_t>(o.get_int("policy-budget", 1'000'000, 1000, 1'000'000'000'000));
    eo.memory_limit = static_cast<std::size_t>(o.get_int("policy-memory", 64, 1, 65536)) << 20;
    eo.time_limit = std::chrono::milliseconds(o.get_int("policy-time-limit", 1000, 1, 3'600'000));
    engine_ = std::make_unique<engine>(eo);
    for (const std::string& v : o.get_all("policy"))
      for (const std::string& file : split(v, ',')) {
        try {
          engine_->load_file(file);
        } catch (const policy_error& e) {
          knobs().clear_initial();
          throw option_error("--grain:policy=" + file + ": " + e.what());
        }
        spdlog::debug("grain: loaded policy {}", file);
      }
    log_listener_ = knobs().add_listener(log_decision);
    workers_ = rt.num_workers();
  }

  void start(runtime_core&) override {
    if (!engine_) return;
    detail::attach_cpp_policies(*engine_);
    g_engine.store(engine_.get());
    instrumentation::add_listener(engine_.get());
    engine_->start(static_cast<double>(workers_));
  }

  void stop(runtime_core&) override { shutdown(); }
  // On a signal: a rule looping under a long --grain:policy-time-limit must not hold the end.
  void emergency_stop(runtime_core&) override {
    if (engine_) engine_->interrupt();
    shutdown();
  }

  ~policy_extension() override { shutdown(); }

 private:
  void shutdown() {
    // The signal thread (emergency_stop) and the main thread may both get here.
    if (!engine_ || done_.exchange(true)) return;
    instrumentation::remove_listener(engine_.get());
    engine_->stop();
    detail::detach_cpp_policies(*engine_);
    engine* e = engine_.get();
    g_engine.compare_exchange_strong(e, nullptr);
    if (log_listener_) knobs().remove_listener(log_listener_);
    log_listener_ = 0;
    auto pending = knobs().pending_initial();
    for (auto& n : pending)
      spdlog::warn("grain: --grain:knob={}=...: no knob of that name was defined (known knobs: {})",
                   n, knobs().names());
    knobs().clear_initial();
  }

  // A --grain:knob for a knob not defined yet waits for the application to define it. Only an
  // application can still do that, and its knobs live in namespaces of their own
  // (stencil.nx): a name without a namespace, or in one of the runtime's (whose knobs are all
  // defined before extensions configure), is a mistake to report now, not at exit. The list
  // is explicit because knobs outlive runtimes in a process: "was defined before" does not
  // tell the runtime's namespaces from an application's.
  static void check_pending_knobs() {
    static const char* const runtime_namespaces[] = {"pool", "inline", "loop", "scheduler"};
    for (const std::string& n : knobs().pending_initial()) {
      const auto dot = n.find('.');
      bool runtime_owned = dot == std::string::npos;
      for (const char* ns : runtime_namespaces)
        if (dot != std::string::npos && n.compare(0, dot, ns) == 0) runtime_owned = true;
      if (!runtime_owned) continue;
      knobs().clear_initial();
      throw option_error("--grain:knob=" + n +
                         "=...: no knob of that name (known knobs: " + knobs().names() +
                         "; an application's own knobs are named APP.NAME and may be set before "
                         "it defines them)");
    }
  }

  std::unique_ptr<engine> engine_;
  int log_listener_ = 0;
  unsigned workers_ = 0;
  std::atomic<bool> done_{false};
};

}  // namespace

engine* current_engine() noexcept {
  return g_engine.load();
}

std::unique_ptr<grain::extension> make_extension() {
  return std::make_unique<policy_extension>();
}

}  // namespace grain::policy
