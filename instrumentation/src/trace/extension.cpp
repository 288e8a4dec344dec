// The trace extension: --grain:trace=DIR, --grain:trace-format, --grain:trace-overwrite,
// --grain:trace-counters. It also chooses the counters a trace records by default: all ~130
// of them drown the workers in a viewer, so a trace without --grain:trace-counters keeps the
// few a reader needs to explain a run (the knobs are always recorded, as their own curves).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "grain/ext/runtime_core.hpp"
#include "grain/instrumentation/trace.hpp"

namespace grain::instrumentation {
namespace {

// The default counters (docs/tracing.md lists them): idle rate, task duration and overhead,
// queue lengths, the task count, and the two time sums (Σt_exec, Σt_func) those averages are
// made of, so that a reader can show each sampling interval's idle rate, t_d and t_o instead of
// averages since the start. Short names: this locality's totals (not the pools' or the
// workers', which are on request).
const std::vector<std::string>& default_counters() {
  static const std::vector<std::string> d = {
      "/threads/idle-rate",
      "/threads/time/average",
      "/threads/time/average-overhead",
      "/threads/queue-length/pending",
      "/threads/queue-length/staged",
      "/threads/count/cumulative",
      "/threads/time/cumulative",
      "/threads/time/overall",
  };
  return d;
}

class trace_extension final : public extension {
 public:
  std::string name() const override { return "trace"; }

  std::vector<option_spec> option_specs() const override {
    return {
        {"trace",
         "record tasks, counters and policy decisions into DIR (DIR/traces.otf2; "
         "DIR/trace.pftrace with --grain:trace-format=perfetto, DIR/trace.json[.gz] with chrome "
         "or chrome.gz)",
         true, false, "DIR"},
        {"trace-format",
         "otf2 (default), perfetto (Perfetto's protobuf format), chrome (Chrome trace-event "
         "JSON) or chrome.gz (the same, gzip-compressed)",
         true, false, "otf2|perfetto|chrome|chrome.gz"},
        {"trace-overwrite", "allow --grain:trace=DIR to exist (its old trace is replaced)", false,
         false, ""},
        {"trace-counters",
         "record only the counters matching PATTERN ('*' wildcards; repeatable; 'all': every "
         "counter; default: idle rate, task duration and overhead, queue lengths, task count)",
         true, true, "PATTERN"},
    };
  }

  void configure(const options& o, runtime_core& rt) override {
    // Without OTF2 (CMake GRAIN_WITH_OTF2=OFF) Perfetto's format is the default.
    const std::string fmt = o.get("trace-format", GRAIN_WITH_OTF2 ? "otf2" : "perfetto");
    trace_format f;
    if (fmt == "otf2" && !GRAIN_WITH_OTF2)
      throw option_error(
          "--grain:trace-format=otf2: OTF2 is not built in: grain was configured without it "
          "(GRAIN_WITH_OTF2=OFF; install libopen-trace-format2-dev and configure again); use "
          "perfetto, chrome or chrome.gz");
    else if (fmt == "otf2")
      f = trace_format::otf2;
    else if (fmt == "perfetto")
      f = trace_format::perfetto;
    else if (fmt == "chrome" || fmt == "json")
      f = trace_format::chrome;
    else if (fmt == "chrome.gz" || fmt == "json.gz")
      f = trace_format::chrome_gz;
    else
      throw option_error("--grain:trace-format=" + fmt +
                         ": unknown format; use otf2, perfetto, chrome or chrome.gz");
    if (!o.has("trace")) {
      if (o.has("trace-format") || o.has("trace-overwrite") || o.has("trace-counters"))
        spdlog::warn(
            "grain: --grain:trace-format/--grain:trace-overwrite without --grain:trace "
            "have no effect");
      return;
    }
    trace_config cfg;
    cfg.dir = o.get("trace");
    cfg.format = f;
    cfg.overwrite = o.has("trace-overwrite");
    cfg.counter_patterns = o.get_all("trace-counters");
    // trace_config's empty list means every counter.
    if (cfg.counter_patterns.empty())
      cfg.counter_patterns = default_counters();
    else if (std::find(cfg.counter_patterns.begin(), cfg.counter_patterns.end(), "all") !=
             cfg.counter_patterns.end())
      cfg.counter_patterns.clear();
    cfg.workers = rt.num_workers();
    cfg.locality = rt.locality();
    session_ = std::make_unique<trace_session>(std::move(cfg));
  }

  void start(runtime_core&) override {
    if (session_) session_->start();
  }

  void stop(runtime_core&) override {
    if (session_) session_->stop();
  }

  void emergency_stop(runtime_core&) override {
    if (session_) session_->emergency_stop();
  }

  // An extension configured or started after this one refused the run: a run that did not
  // happen leaves no trace, and the one an overwrite was to replace stays.
  void start_failed(runtime_core&) noexcept override {
    if (session_) session_->abandon();
  }

 private:
  std::unique_ptr<trace_session> session_;
};

}  // namespace

std::unique_ptr<grain::extension> make_trace_extension() {
  return std::make_unique<trace_extension>();
}

}  // namespace grain::instrumentation
