#pragma once
// --grain:print-counter: which counters print, when, and in which format (output.cpp).
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "grain/instrumentation/counters.hpp"
#include "grain/instrumentation/listener.hpp"

namespace grain::instrumentation::detail {

// hpx: HPX's --hpx:print-counter lines, NAME,N,T,[s],VALUE[,[UNIT]] (output.cpp).
enum class print_format { csv, table, hpx };
// When --grain:print-counter prints (--grain:print-counter-interval, -at, --grain:reset-counters).
struct print_schedule {
  std::uint64_t interval_ms = 0;  // 0: no periodic prints
  bool at_start = false;          // once, by print_start()
  bool at_stop = true;            // the final snapshot
  bool reset = false;             // registry().reset() after each print: per-interval values
};
class print_listener : public listener {
 public:
  // `out` is owned (closed at destruction) unless it is stdout/stderr; `destination` is its
  // path (empty: standard output), for the one message a failed write gives.
  print_listener(std::vector<counter_pattern> patterns, print_schedule when, print_format fmt,
                 std::FILE* out, std::uint64_t start_ns, std::string destination = {});
  ~print_listener() override;
  void on_sample(const counter_snapshot& s) override;
  // The start-up print (if scheduled), from a snapshot taken now.
  void print_start();
  // Patterns that matched no counter so far.
  std::vector<std::string> unmatched() const;

 private:
  void print(const counter_snapshot& s, const char* label);
  // A write failed (a full disk, a file-size limit, a closed pipe): say so once, stop printing,
  // and give a regular file the name FILE.incomplete, as every output that could not be
  // completed has.
  void fail(int err, double t_s);
  std::vector<counter_pattern> patterns_;
  std::vector<bool> matched_;
  print_schedule when_;
  std::uint64_t interval_ns_;
  print_format fmt_;
  std::FILE* out_;
  std::string destination_;
  double last_written_s_ = -1;  // time of the last print that reached the destination
  std::uint64_t start_ns_;
  std::uint64_t last_print_ns_ = 0;
  bool header_done_ = false;
  std::uint64_t layout_ = ~0ull;
  std::vector<std::size_t> selected_;
  std::vector<std::string> units_;  // per selected_ entry, for the hpx format
  std::uint64_t prints_ = 0;        // prints so far (the hpx format's sequence number)
};

}  // namespace grain::instrumentation::detail
