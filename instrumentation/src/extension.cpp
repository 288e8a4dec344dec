// The instrumentation extension: wires registry, sampler, output, summary, PAPI, calibration.
#include "grain/instrumentation/extension.hpp"

#include <errno.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>

#include "calibration.hpp"
#include "grain/clock.hpp"
#include "grain/instrumentation/app.hpp"
#include "grain/instrumentation/threads_counters.hpp"
#include "loop_counters.hpp"
#include "papi.hpp"
#include "print_listener.hpp"
#include "sampler.hpp"
#include "summary.hpp"
#include "task_error_counters.hpp"

namespace grain::instrumentation {
namespace {

using detail::print_format;

std::string default_app_name() {
  const char* n = program_invocation_short_name;
  return (n && *n) ? n : "grain-app";
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    std::size_t end = s.find(',', pos);
    std::string item = s.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (!item.empty()) out.push_back(item);
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return out;
}

class instrumentation_extension final : public extension {
 public:
  std::string name() const override { return "instrumentation"; }

  std::vector<option_spec> option_specs() const override {
    return {
        {"sample-interval", "counter sampling period in ms (default 10, 0: only at exit)", true,
         false, "MS"},
        {"print-counter", "print the counters matching NAME ('*' wildcards; repeatable)", true,
         true, "NAME"},
        {"print-counter-interval", "print period in ms (default 0: once, at exit)", true, false,
         "MS"},
        {"print-counter-at",
         "also print at start, at stop (= shutdown, the default) or none of them; "
         "comma-separated, replaces the default",
         true, true, "start|stop|shutdown|none"},
        {"reset-counters",
         "reset every counter after each print: printed values are per print interval", false,
         false, ""},
        {"print-counter-format",
         "csv (default: time_s,counter,value), table, or hpx (HPX's NAME,N,T,[s],VALUE[,[UNIT]])",
         true, false, "csv|table|hpx"},
        {"print-counter-destination", "write printed counters to FILE (default stdout)", true,
         false, "FILE"},
        {"list-counters", "list every counter with its unit and description, then exit", false,
         false, ""},
        {"summary", "write a JSON run summary (counters, knobs, decisions) to FILE at exit", true,
         false, "FILE.json"},
        {"papi", "count PAPI events per worker, e.g. PAPI_TOT_INS,PAPI_TOT_CYC", true, false,
         "EVENTS"},
        {"calibration",
         "read t_d1 (one-worker task duration) from FILE for /threads/wait-time-inflation", true,
         false, "FILE"},
        {"save-calibration", "save this one-worker run's average task duration as t_d1 in FILE",
         true, false, "FILE"},
        {"app-name", "application name for calibration files (default: program name)", true, false,
         "NAME"},
    };
  }

  void configure(const options& o, runtime_core& rt) override {
    try {
      configure_impl(o, rt);
    } catch (...) {
      unregister();
      throw;
    }
  }

  void start(runtime_core& rt) override {
    // Checked once every extension is configured: the summary may go into the trace directory
    // (--grain:trace=DIR --grain:summary=DIR/s.json, as scripts/demo does), which the trace
    // extension creates after this one's configure. A run refused here gives that directory
    // back (trace_directory.hpp).
    if (!summary_.empty()) detail::check_summary_path(summary_);
    start_ns_ = rt.start_time_ns();
    if (printer_) {
      add_listener(printer_.get());
      printer_->print_start();
    }
    // Printing needs samples: the sampler runs at the finer of the two periods.
    std::uint64_t period = sample_interval_ms_;
    if (print_interval_ms_ > 0 && (period == 0 || print_interval_ms_ < period))
      period = print_interval_ms_;
    sampler_.start(period);
    started_ = true;
    grain::event("start", {{"workers", static_cast<double>(rt.num_workers())}});
  }

  void stop(runtime_core& rt) override {
    std::lock_guard lk(stop_mutex_);
    if (!started_ || stopped_) return;
    stopped_ = true;
    grain::event("stop", {});
    sampler_.stop();  // final snapshot: listeners see final = true
    finish(rt);
  }

  void emergency_stop(runtime_core& rt) override {
    // SIGINT/SIGTERM: flush what we can (the summary and the printed counters).
    std::unique_lock lk(stop_mutex_, std::try_to_lock);
    if (!lk.owns_lock() || !started_ || stopped_) return;
    stopped_ = true;
    sampler_.stop();
    finish(rt);
  }

  ~instrumentation_extension() override { unregister(); }

 private:
  void configure_impl(const options& o, runtime_core& rt) {
    // Counters are named after this locality from here on (the distributed extension, which
    // configures first, has set it).
    set_here_locality(rt.locality());
    sample_interval_ms_ =
        static_cast<std::uint64_t>(o.get_int("sample-interval", 10, 0, 3'600'000));
    print_interval_ms_ =
        static_cast<std::uint64_t>(o.get_int("print-counter-interval", 0, 0, 3'600'000));
    app_name_ = o.get("app-name", default_app_name());
    workers_ = rt.num_workers();

    // Calibration (t_d1): docs/counters.md, "Obtaining t_d1".
    threads_options topts;
    if (o.has("calibration")) {
      const std::string file = o.get("calibration");
      try {
        topts.t_d1_ns = detail::load_calibration(file, app_name_);
      } catch (const std::runtime_error& e) {
        throw option_error(std::string("--grain:calibration=") + file + ": " + e.what());
      }
      if (!topts.t_d1_ns)
        spdlog::warn(
            "grain: {} has no calibration for application '{}' (save one with "
            "--grain:threads=1 --grain:save-calibration={}); the wait-time-inflation "
            "counters report unavailable",
            file, app_name_, file);
    }
    if (o.has("save-calibration")) {
      save_calibration_ = o.get("save-calibration");
      if (rt.num_workers() != 1)
        throw option_error(
            "--grain:save-calibration needs a one-worker run (t_d1 is the task "
            "duration on one core): add --grain:threads=1");
      try {
        detail::check_calibration_path(save_calibration_);
      } catch (const std::runtime_error& e) {
        throw option_error(std::string("--grain:save-calibration=") + e.what());
      }
    }

    // Counters of this runtime.
    source_ = make_stats_source(rt);
    ids_.push_back(registry().add_provider(make_threads_provider(*source_, topts)));
    ids_.push_back(registry().add_provider(sampler_.provider()));
    ids_.push_back(registry().add_provider(detail::make_loop_provider()));
    ids_.push_back(registry().add_provider(detail::make_task_error_provider()));
    if (o.has("papi")) {
      auto events = split_list(o.get("papi"));
      if (events.empty()) throw option_error("--grain:papi: no event given (e.g. PAPI_TOT_INS)");
      papi_ = std::make_unique<detail::papi_session>(events, rt);
      ids_.push_back(registry().add_provider(papi_->provider()));
    }

    std::string dest = o.get("print-counter-destination", "");
    if (o.has("list-counters")) {
      std::FILE* out = dest.empty() ? stdout : std::fopen(dest.c_str(), "w");
      if (!out)
        throw option_error("--grain:print-counter-destination=" + dest + ": " +
                           std::strerror(errno));
      list_counters(out);
      if (out != stdout) std::fclose(out);
      throw startup_exit{0};
    }

    summary_ = o.get("summary", "");
    auto names = o.get_all("print-counter");
    if (!names.empty()) {
      std::vector<counter_pattern> pats;
      pats.reserve(names.size());
      for (auto& n : names)
        if (names_this_locality(n, rt)) pats.push_back(checked_pattern(n));
      const detail::print_schedule schedule = print_schedule_of(o);
      std::string fmt = o.get("print-counter-format", "csv");
      print_format pf;
      if (fmt == "csv")
        pf = print_format::csv;
      else if (fmt == "table")
        pf = print_format::table;
      else if (fmt == "hpx")
        pf = print_format::hpx;
      else
        throw option_error("--grain:print-counter-format=" + fmt + ": use csv, table or hpx");
      std::FILE* out = stdout;
      if (!dest.empty()) {
        out = std::fopen(dest.c_str(), "w");
        if (!out)
          throw option_error("--grain:print-counter-destination=" + dest + ": " +
                             std::strerror(errno));
      }
      printer_ = std::make_unique<detail::print_listener>(std::move(pats), schedule, pf, out,
                                                          rt.start_time_ns(), dest);
    } else if (o.has("print-counter-format") || o.has("print-counter-interval") ||
               o.has("print-counter-at") || o.has("reset-counters") || (!dest.empty())) {
      spdlog::warn(
          "grain: --grain:print-counter-* options without --grain:print-counter have "
          "no effect");
    }
  }

  // Objects whose counters the program defines while it runs (grain::counters::define,
  // grain::event): a pattern that may name one of them can only be checked at exit.
  static bool defined_later(std::string_view object) {
    return glob_match(object, "app") || glob_match(object, "events");
  }

  // Under mpirun every rank gets the same options, and each rank has only its own counters:
  // a pattern whose instance names another locality (locality#N, no wildcard in N) is that
  // rank's to print, and a locality that is not in the job is an error.
  static bool names_this_locality(const std::string& n, const runtime_core& rt) {
    const auto name = parse_counter_name(n);
    if (!name) return true;  // malformed: checked_pattern reports it
    const std::string_view inst = name->instance;
    constexpr std::string_view prefix = "locality#";
    if (inst.substr(0, prefix.size()) != prefix) return true;
    const std::string_view rest = inst.substr(prefix.size());
    const std::string_view digits = rest.substr(0, rest.find('/'));
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos)
      return true;  // a wildcard (locality#*) or not a number: matched against our counters
    const unsigned long named = digits.size() > 9 ? ~0UL : std::stoul(std::string(digits));
    if (named >= rt.num_localities())
      throw option_error("--grain:print-counter=" + n + ": there is no locality#" +
                         std::string(digits) + " (the job has " +
                         std::to_string(rt.num_localities()) + " localit" +
                         (rt.num_localities() == 1 ? "y" : "ies") + ", locality#0 to locality#" +
                         std::to_string(rt.num_localities() - 1) + ")");
    return named == rt.locality();
  }

  // A --grain:print-counter pattern that names no counter is an error now, not after the run.
  counter_pattern checked_pattern(const std::string& n) {
    std::optional<counter_pattern> p;
    try {
      p.emplace(n);
    } catch (const std::invalid_argument& e) {
      throw option_error(std::string("--grain:print-counter: ") + e.what());
    }
    const std::string& obj = p->parts().object;
    if (defined_later(obj) || !registry().list(n).empty()) return *p;
    std::string why = "no such counter";
    if (obj.find('*') == std::string::npos && !registry().has_object(obj))
      why += " (no counter object '" + obj + "')";
    if (n.find('*') == std::string::npos)
      if (auto near = registry().closest(n)) why += "; did you mean " + *near + "?";
    throw option_error("--grain:print-counter=" + n + ": " + why +
                       (why.back() == '?' ? " " : ". ") +
                       "Run the program with --grain:list-counters to see the valid names ('*' "
                       "is a wildcard, e.g. /threads{locality#0/total}/*)");
  }

  static detail::print_schedule print_schedule_of(const options& o) {
    detail::print_schedule w;
    w.interval_ms =
        static_cast<std::uint64_t>(o.get_int("print-counter-interval", 0, 0, 3'600'000));
    w.reset = o.has("reset-counters");
    if (o.has("print-counter-at")) {
      w.at_stop = false;
      for (auto& v : o.get_all("print-counter-at"))
        for (auto& at : split_list(v)) {
          if (at == "start")
            w.at_start = true;
          else if (at == "stop" || at == "shutdown")
            w.at_stop = true;
          else if (at != "none")
            throw option_error("--grain:print-counter-at=" + at +
                               ": use start, stop (or its HPX name shutdown), or none");
        }
    }
    if (!w.at_start && !w.at_stop && w.interval_ms == 0)
      throw option_error(
          "--grain:print-counter-at=none without --grain:print-counter-interval would print "
          "nothing");
    return w;
  }

  void list_counters(std::FILE* out) {
    auto all = registry().list("*");
    std::size_t w = 0, wu = 4;
    for (auto& c : all) {
      w = std::max(w, c.name.size());
      wu = std::max(wu, c.unit.size());
    }
    std::fprintf(out, "%-*s  %-*s  %s\n", static_cast<int>(w), "name", static_cast<int>(wu), "unit",
                 "description");
    for (auto& c : all)
      std::fprintf(out, "%-*s  %-*s  %s\n", static_cast<int>(w), c.name.c_str(),
                   static_cast<int>(wu), c.unit.c_str(), c.description.c_str());
    std::fprintf(out,
                 "\nA name without {instance} means {locality#0/total}; '*' is a wildcard. "
                 "/app/... counters appear once the application defines them.\n");
    std::fflush(out);
  }

  void finish(runtime_core& rt) {
    const counter_snapshot last = sampler_.latest();
    const std::uint64_t end = now_ns();
    if (printer_) {
      remove_listener(printer_.get());
      for (auto& p : printer_->unmatched())
        spdlog::error(
            "grain: --grain:print-counter={} matched no counter; run with "
            "--grain:list-counters to see the valid names",
            p);
      printer_.reset();  // closes the destination file
    }
    if (!summary_.empty()) {
      try {
        detail::write_summary(summary_, last, static_cast<double>(end - start_ns_) * 1e-9,
                              start_ns_, app_name_, rt.num_workers());
      } catch (const std::exception& e) {
        spdlog::error("grain: {}", e.what());
      }
    }
    if (!save_calibration_.empty()) {
      const auto* t = last.find("/threads{" + here_instance() + "}/time/average");
      const auto* n = last.find("/threads{" + here_instance() + "}/count/cumulative");
      if (!t || !t->available || !n) {
        spdlog::error("grain: --grain:save-calibration={}: no task completed, nothing saved",
                      save_calibration_);
      } else {
        try {
          detail::save_calibration(save_calibration_, app_name_, t->value,
                                   static_cast<std::uint64_t>(n->value), rt.num_workers());
          spdlog::info("grain: saved t_d1 = {} ns for '{}' in {}", t->value, app_name_,
                       save_calibration_);
        } catch (const std::exception& e) {
          spdlog::error("grain: {}", e.what());
        }
      }
    }
    unregister();
  }

  void unregister() {
    for (int id : ids_) registry().remove(id);
    ids_.clear();
  }

  detail::sampler sampler_;
  std::unique_ptr<stats_source> source_;
  std::unique_ptr<detail::papi_session> papi_;
  std::unique_ptr<detail::print_listener> printer_;
  std::vector<int> ids_;
  std::uint64_t sample_interval_ms_ = 10, print_interval_ms_ = 0, start_ns_ = 0;
  std::string summary_, save_calibration_, app_name_;
  unsigned workers_ = 0;
  std::mutex stop_mutex_;
  bool started_ = false, stopped_ = false;
};

}  // namespace

std::unique_ptr<grain::extension> make_extension() {
  return std::make_unique<instrumentation_extension>();
}

}  // namespace grain::instrumentation
