#pragma once
// Internal pieces of grain_instrumentation shared between its translation units.
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "grain/ext/runtime_core.hpp"
#include "grain/instrumentation/counters.hpp"
#include "grain/instrumentation/listener.hpp"

namespace grain::instrumentation::detail {

// ---- listeners (listeners.cpp) ----
void notify_sample(const counter_snapshot& s);
void notify_event(const app_event& e);

// ---- JSON (json.cpp): enough for the summary and the calibration file ----
std::string json_string(std::string_view s);  // quoted and escaped
std::string json_number(double v);            // shortest round-trip; null if not finite

struct json_member;
struct json_value {
  enum type { null, boolean, number, string, array, object } t = null;
  bool b = false;
  double n = 0;
  std::string s;
  std::vector<json_value> a;
  // Not std::pair<std::string, json_value>: a pair needs its members complete, and json_value
  // is not yet (g++ instantiates it late enough, clang does not); vector allows it.
  std::vector<json_member> o;
  const json_value* get(std::string_view key) const noexcept;
};
struct json_member {
  std::string first;
  json_value second;
};
// Throws std::runtime_error with the byte offset of the error.
json_value json_parse(std::string_view text);

// ---- calibration (calibration.cpp) ----
// The t_d1 of `app` in FILE; nullopt when the file has no entry for it. Throws
// std::runtime_error when the file cannot be read or is not a calibration file.
std::optional<double> load_calibration(const std::string& path, const std::string& app);
// Adds or replaces the entry of `app` (other applications' entries are kept).
void save_calibration(const std::string& path, const std::string& app, double t_d1_ns,
                      std::uint64_t tasks, unsigned workers);

// ---- summary (summary.cpp) ----
// Throws option_error when the summary could not be written at exit (checked at start-up).
void check_summary_path(const std::string& path);
void write_summary(const std::string& path, const counter_snapshot& final_snapshot,
                   double wall_time_s, std::uint64_t start_ns, const std::string& app,
                   unsigned workers);

// ---- print-counter output (output.cpp) ----
enum class print_format { csv, table };
// When --grain:print-counter prints (--grain:print-counter-interval, -at, --grain:reset-counters).
struct print_schedule {
  std::uint64_t interval_ms = 0;  // 0: no periodic prints
  bool at_start = false;          // once, by print_start()
  bool at_stop = true;            // the final snapshot
  bool reset = false;             // registry().reset() after each print: per-interval values
};
class print_listener : public listener {
 public:
  // `out` is owned (closed at destruction) unless it is stdout/stderr.
  print_listener(std::vector<counter_pattern> patterns, print_schedule when, print_format fmt,
                 std::FILE* out, std::uint64_t start_ns);
  ~print_listener() override;
  void on_sample(const counter_snapshot& s) override;
  // The start-up print (if scheduled), from a snapshot taken now.
  void print_start();
  // Patterns that matched no counter so far.
  std::vector<std::string> unmatched() const;

 private:
  void print(const counter_snapshot& s, const char* label);
  std::vector<counter_pattern> patterns_;
  std::vector<bool> matched_;
  print_schedule when_;
  std::uint64_t interval_ns_;
  print_format fmt_;
  std::FILE* out_;
  std::uint64_t start_ns_;
  std::uint64_t last_print_ns_ = 0;
  bool header_done_ = false;
  std::uint64_t layout_ = ~0ull;
  std::vector<std::size_t> selected_;
};

// ---- /loops counters (loop_counters.cpp) ----
std::shared_ptr<counter_provider> make_loop_provider();

// ---- /threads{locality#0/total}/count/unread-exceptions (task_error_counters.cpp) ----
std::shared_ptr<counter_provider> make_task_error_provider();

// ---- sampler (sampler.cpp) ----
class sampler {
 public:
  sampler();
  ~sampler();
  // interval_ms == 0: no thread; samples only on sample_now() and stop().
  void start(std::uint64_t interval_ms);
  // Stops the thread (if any) and takes the final snapshot (final = true).
  void stop();
  void sample_now(bool final = false);
  counter_snapshot latest() const;
  // Counters about the sampler itself (/sampler{locality#0/total}/...).
  std::shared_ptr<counter_provider> provider();

  struct impl;

 private:
  std::unique_ptr<impl> impl_;
};

// ---- PAPI (papi.cpp) ----
struct papi_event_status {
  std::string name;
  bool available = false;
  std::string reason;  // why not, when unavailable
};
// Initialises PAPI (library + thread support) once per process; false with a reason when the
// library cannot be initialised.
bool papi_init(std::string* error);
// For each event: can PAPI count it here? (name known, event offered, and an event set with it
// can be added, started and read on the calling thread.)
std::vector<papi_event_status> papi_check(const std::vector<std::string>& events);

class papi_session {
 public:
  // Warns once per unavailable event. Installs the worker_start/worker_stop hooks (chained).
  papi_session(const std::vector<std::string>& events, runtime_core& rt);
  ~papi_session();
  std::shared_ptr<counter_provider> provider();
  const std::vector<papi_event_status>& status() const noexcept;

  struct impl;

 private:
  std::shared_ptr<impl> impl_;
};

}  // namespace grain::instrumentation::detail
