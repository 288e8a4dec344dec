#pragma once
// The counter registry: HPX-style names, kinds, units, descriptions, wildcards, reset.
//
// A counter name is /object{instance}/counter, for example
//   /threads{locality#0/pool#default/worker#1}/idle-rate
//   /threads{locality#0/pool#default/total}/count/cumulative
//   /threads{locality#0/total}/time/average
//   /app/iteration-time                      (no instance)
// In a pattern, '*' matches any run of characters inside the object, the instance or the
// counter part ("/threads{*}/idle-rate", "/threads{locality#0/total}/*", "/*{*}/*"). A pattern
// without {instance} stands for the instance locality#0/total, and also matches counters that
// were defined without an instance: "/threads/idle-rate" is /threads{locality#0/total}/idle-rate.
//
// Values come from providers. A provider owns a fixed list of counters and computes all of
// them in one call (the /threads provider reads each worker's statistics once per sample);
// external parts (coalescing, network, applications) register providers or single functions.
// Counters report values relative to the last reset(): providers keep a baseline.
// See docs/counters.md.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grain/instrumentation/listener.hpp"

namespace grain::instrumentation {

struct counter_info {
  std::string name;         // full name
  std::string unit;         // "ns", "count", "ratio" (in [0,1]), "bytes", ... ("" if none)
  std::string description;  // one line
  counter_kind kind = counter_kind::raw;
};

struct counter_reading {
  double value = 0;
  bool available = true;
};

// The three parts of a name; `instance` is empty for names without {...}.
struct counter_name {
  std::string object;    // "threads"
  std::string instance;  // "locality#0/pool#default/worker#1", "" when absent
  std::string counter;   // "idle-rate", "count/cumulative"
  std::string full() const;
};

// Parses "/object{instance}/counter" or "/object/counter". Returns nullopt for malformed
// names (no leading '/', empty object or counter, unbalanced braces).
std::optional<counter_name> parse_counter_name(std::string_view text);

// '*' matches any run of characters (including '/'); everything else matches itself.
bool glob_match(std::string_view pattern, std::string_view text) noexcept;

// The instance a pattern without {instance} stands for: this process's locality,
// "locality#R/total" (R = the MPI rank; 0 for a program that is one locality). Set by the
// instrumentation extension from runtime_core::locality() before any counter is named.
std::string_view default_instance() noexcept;
// "locality#R/" + rest for this process's locality R, e.g. here_instance("pool#default/total").
std::string here_instance(std::string_view rest = "total");
void set_here_locality(unsigned rank);
unsigned here_locality() noexcept;

class counter_pattern {
 public:
  // Throws std::invalid_argument for a malformed pattern.
  explicit counter_pattern(std::string_view text);
  bool matches(const counter_name& n) const noexcept;
  bool matches(std::string_view full_name) const;
  const std::string& text() const noexcept { return text_; }
  const counter_name& parts() const noexcept { return parts_; }

 private:
  std::string text_;
  counter_name parts_;
};

// A source of counters. counters() is fixed once the provider is registered.
class counter_provider {
 public:
  virtual ~counter_provider() = default;
  virtual const std::vector<counter_info>& counters() const = 0;
  // Write one reading per counter, in the order of counters(). Called with the registry's lock
  // held (never concurrently for one registry); `now` is grain::now_ns().
  virtual void sample(std::uint64_t now, counter_reading* out) = 0;
  // Make values relative to now (monotonic and average counters); gauges ignore it. `now` is
  // the time of the last sample() when the registry resets as of a snapshot (a provider that
  // kept that sample's readings may start from them), otherwise grain::now_ns().
  virtual void reset(std::uint64_t /*now*/) {}
};

class counter_registry {
 public:
  counter_registry();
  ~counter_registry();
  counter_registry(const counter_registry&) = delete;
  counter_registry& operator=(const counter_registry&) = delete;

  // Register a provider. Throws std::invalid_argument for a malformed or duplicate name
  // (/o/c and /o{locality#0/total}/c are the same name).
  // Returns an id for remove().
  int add_provider(std::shared_ptr<counter_provider> p);
  // One counter computed by a function. For monotonic counters reset() subtracts the value
  // at the time of the reset; for others `on_reset` (if given) is called.
  int add_counter(counter_info info, std::function<counter_reading()> fn,
                  std::function<void()> on_reset = {});
  int add_counter(counter_info info, std::function<double()> fn,
                  std::function<void()> on_reset = {});
  void remove(int id);

  bool contains(std::string_view full_name) const;
  // Counters matching the pattern (all with "*" or ""), sorted by name.
  std::vector<counter_info> list(std::string_view pattern = "*") const;
  // True when some registered counter has this object ("threads", "papi", "app").
  bool has_object(std::string_view object) const;
  // The registered name nearest to `name` in edit distance (in the short form when `name`
  // has no {instance}), for "did you mean" messages; nullopt when none is near.
  std::optional<std::string> closest(std::string_view name) const;
  // Evaluate the counters matching `pattern` now. Throws std::invalid_argument if malformed.
  std::vector<counter_value> query(std::string_view pattern);
  // One counter by full name (or its short form without {locality#0/total}); nullopt when no
  // such counter is registered.
  std::optional<counter_value> value(std::string_view full_name);

  // Every counter starts again from zero (relative to now).
  void reset();
  // Every counter starts again from zero as of a snapshot just taken (`taken.time_ns`): the
  // providers that still hold the readings it came from (/threads) start from exactly those,
  // so that nothing counted between the snapshot and this call is lost and per-interval
  // values add up to the total; the others start from now.
  void reset(const counter_snapshot& taken);

  // Fill `out` with every counter, sorted by name. Storage (and the name strings) of `out` is
  // reused while out.layout_generation equals the registry's layout: a sample then costs one
  // provider call per provider and no allocation.
  void sample(counter_snapshot& out);
  std::uint64_t layout_generation() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

// A histogram of values (e.g. the gap between parcel arrivals, docs/counters.md, "Counters from
// other parts"): linear buckets over [min, max), one below and one at/above. record() is
// thread-safe and cheap (a few relaxed atomic operations, no lock).
class histogram {
 public:
  histogram(double min, double max, std::size_t buckets);
  void record(double v) noexcept;
  // For a writer that counts locally and adds in batches: the bucket record(v) would count v
  // in, and the addition of such counts (per_bucket[K] values in bucket K, K < buckets()+2)
  // whose sum is `sum`.
  std::size_t bucket_of(double v) const noexcept;
  void add(const std::uint32_t* per_bucket, double sum) noexcept;
  double min() const noexcept { return min_; }
  double max() const noexcept { return max_; }
  std::size_t buckets() const noexcept { return n_; }  // inner buckets; +2 outer ones
  // Raw totals since creation: count, sum, and per bucket (0: below min, n+1: >= max).
  std::uint64_t count() const noexcept;
  double sum() const noexcept;
  std::uint64_t bucket(std::size_t k) const noexcept;

 private:
  double min_, max_, width_;
  std::size_t n_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> counts_;
  std::atomic<std::uint64_t> count_{0};
  std::atomic<double> sum_{0};
};

// Registers info.name (kind histogram: the mean of the values since the last reset, unavailable
// before the first), info.name + "/count", and info.name + "/bucket#K" for K = 0..buckets+1
// (values in [min + (K-1)*w, min + K*w); bucket#0 is below min, the last at/above max).
// Returns the registry id.
int add_histogram(counter_registry& r, counter_info info, std::shared_ptr<histogram> h);

// The process-wide registry (exists before and after the runtime).
counter_registry& registry();

// The most recent snapshot the sampler took (empty before the first one, or when no runtime
// with the instrumentation extension runs).
counter_snapshot latest_snapshot();

// Take a snapshot now and hand it to every listener (on the calling thread), e.g. for a
// writer that wants final values in its own stop(), which runs before the sampler's final
// snapshot. No effect when no runtime with the instrumentation extension runs.
void sample_now();

}  // namespace grain::instrumentation
