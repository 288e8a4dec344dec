#pragma once
// The sampler: the thread that takes counter snapshots at an interval (sampler.cpp).
#include <cstdint>
#include <memory>

#include "grain/instrumentation/counters.hpp"

namespace grain::instrumentation::detail {

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

}  // namespace grain::instrumentation::detail
