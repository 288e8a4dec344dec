#pragma once
// The counter snapshot the policy thread is processing, with a name index that also knows
// the short names (/threads/idle-rate for /threads{locality#0/total}/idle-rate). Separate
// because every reader (grain.counter, grain.when, C++ policies, tuner metrics) looks
// counters up the same way.
#include <string>
#include <string_view>
#include <unordered_map>

#include "grain/instrumentation/listener.hpp"

namespace grain::policy {

class counter_view {
 public:
  instrumentation::counter_snapshot& snapshot() { return cur_; }
  // The counter of that name in the snapshot; null when absent.
  const instrumentation::counter_value* find(std::string_view name);

 private:
  instrumentation::counter_snapshot cur_;
  std::uint64_t index_generation_ = ~0ull;
  std::size_t index_size_ = 0;
  std::unordered_map<std::string, std::size_t> index_;
};

}  // namespace grain::policy
