// The /loops counters: what the parallel loops did and which chunk size they used. The runtime
// keeps the totals in grain::loop_statistics() (it knows nothing of counters); this provider
// reads them. Formulas: docs/counters.md.
#include <memory>
#include <vector>

#include "grain/parallel/loop_stats.hpp"
#include "loop_counters.hpp"

namespace grain::instrumentation::detail {
namespace {

struct loop_totals {
  std::uint64_t calls = 0, iterations = 0, chunks = 0;
};

loop_totals read_totals() noexcept {
  const loop_stats& s = loop_statistics();
  return {s.calls.load(std::memory_order_relaxed), s.iterations.load(std::memory_order_relaxed),
          s.chunks.load(std::memory_order_relaxed)};
}

class loop_provider final : public counter_provider {
 public:
  loop_provider() {
    const std::string p = "/loops{" + here_instance() + "}/";
    infos_ = {
        {p + "count/calls", "count", "parallel loop calls (seq loops are not counted)",
         counter_kind::monotonic},
        {p + "count/iterations", "count", "loop iterations executed by those calls",
         counter_kind::monotonic},
        {p + "count/chunks", "count",
         "chunks executed (an auto timing run and an adaptive serial start are one chunk each)",
         counter_kind::monotonic},
        {p + "chunk-size", "count",
         "chunk size chosen by the chunker of the most recently finished parallel loop",
         counter_kind::gauge},
        {p + "average-chunk-size", "count",
         "average iterations per chunk, count/iterations / count/chunks", counter_kind::average},
    };
    base_ = read_totals();
  }

  const std::vector<counter_info>& counters() const override { return infos_; }

  void reset(std::uint64_t) override { base_ = read_totals(); }

  void sample(std::uint64_t, counter_reading* out) override {
    const loop_totals now = read_totals();
    const double calls = static_cast<double>(now.calls - base_.calls);
    const double iterations = static_cast<double>(now.iterations - base_.iterations);
    const double chunks = static_cast<double>(now.chunks - base_.chunks);
    out[0] = {calls, true};
    out[1] = {iterations, true};
    out[2] = {chunks, true};
    const std::uint64_t last = loop_statistics().last_chunk_size.load(std::memory_order_relaxed);
    out[3] = {static_cast<double>(last), now.calls != 0};  // no loop yet: nothing to report
    out[4] = chunks > 0 ? counter_reading{iterations / chunks, true} : counter_reading{0, false};
  }

 private:
  std::vector<counter_info> infos_;
  loop_totals base_;
};

}  // namespace

std::shared_ptr<counter_provider> make_loop_provider() {
  return std::make_shared<loop_provider>();
}

}  // namespace grain::instrumentation::detail
