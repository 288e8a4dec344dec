#pragma once
// What the dashboard page plots: the recent samples of the chosen counters and of every knob,
// and the recent decisions, in bounded rings, handed out as JSON from a sequence number on so
// that a page polling every 200 ms receives only what is new. Filled on the sampler thread
// (samples) and on the thread that sets a knob (decisions); read on the HTTP threads.
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "grain/instrumentation/counters.hpp"
#include "grain/instrumentation/listener.hpp"
#include "grain/knob.hpp"

namespace grain::dashboard::detail {

// What the page shows above the plots.
struct run_info {
  std::string program;
  unsigned locality = 0;
  unsigned workers = 0;
  std::uint64_t sample_interval_ms = 0;
  std::uint64_t start_ns = 0;  // grain::now_ns() at start: times are seconds since then
};

class store final : public instrumentation::listener {
 public:
  // Keeps the last `capacity` samples and the last `decision_capacity` decisions. Counters
  // that match only `helpers` are sent as hidden columns: the page computes from them (an
  // interval's idle rate from the time sums) without a plot of their own.
  store(std::vector<instrumentation::counter_pattern> patterns, run_info info,
        std::size_t capacity = 6000, std::size_t decision_capacity = 1000,
        std::vector<instrumentation::counter_pattern> helpers = {});

  void on_sample(const instrumentation::counter_snapshot& s) override;
  void on_decision(const decision_record& r);
  void set_ended();

  // {"info":{..},"ended":B,"columns":[..],"rows":[[seq,t,v..],..],"decisions":[..]}: the
  // rows with a sequence above `since_row` and the decisions with an id above
  // `since_decision` (all that are kept when those are older).
  std::string json(std::uint64_t since_row, std::uint64_t since_decision) const;

  // CPU time spent in on_sample and on_decision (the dashboard's share of the sampler thread
  // and of the knob setters).
  std::uint64_t cpu_ns() const;

 private:
  struct column {
    std::string name;
    std::string unit;
    bool knob = false;
    bool rate = false;    // monotonic counter: the page plots its change per second
    bool hidden = false;  // matched a helper pattern only: no plot of its own
    const grain::knob* k = nullptr;
  };
  struct row {
    std::uint64_t seq = 0;
    double t = 0;
    std::vector<double> values;  // NaN: not available at this sample
  };
  struct decision {
    std::uint64_t id = 0;
    double t = 0;
    decision_record r;
  };

  void map_counters(const instrumentation::counter_snapshot& s);
  std::size_t column_of_knob(knob* k);

  std::vector<instrumentation::counter_pattern> patterns_, helpers_;
  run_info info_;
  std::size_t capacity_, decision_capacity_;

  mutable std::mutex m_;
  std::vector<column> columns_;                             // append-only: indices stay valid
  std::vector<std::pair<std::size_t, std::size_t>> picks_;  // snapshot index -> column
  std::uint64_t layout_generation_ = ~0ull;
  std::unordered_map<std::string, std::size_t> by_name_;
  std::deque<row> rows_;
  std::deque<decision> decisions_;
  std::uint64_t next_seq_ = 1, next_decision_ = 1;
  bool ended_ = false;
  std::uint64_t cpu_ns_ = 0;
};

}  // namespace grain::dashboard::detail
