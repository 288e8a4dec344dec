// /threads{locality#0/total}/count/unread-exceptions: exceptions thrown by tasks whose futures
// were dropped without anyone reading them. The runtime counts them (shared_state.hpp's
// release); this provider reads the count. docs/counters.md.
#include <memory>
#include <vector>

#include "grain/detail/shared_state.hpp"
#include "task_error_counters.hpp"

namespace grain::instrumentation::detail {
namespace {

class task_error_provider final : public counter_provider {
 public:
  task_error_provider() : base_(grain::detail::unread_exceptions()) {
    infos_ = {{"/threads{" + here_instance() + "}/count/unread-exceptions", "count",
               "exceptions thrown by tasks that nobody read: their futures were dropped "
               "without get()",
               counter_kind::monotonic}};
  }

  const std::vector<counter_info>& counters() const override { return infos_; }
  void reset(std::uint64_t) override { base_ = grain::detail::unread_exceptions(); }
  void sample(std::uint64_t, counter_reading* out) override {
    out[0] = {static_cast<double>(grain::detail::unread_exceptions() - base_), true};
  }

 private:
  std::vector<counter_info> infos_;
  std::uint64_t base_;
};

}  // namespace

std::shared_ptr<counter_provider> make_task_error_provider() {
  return std::make_shared<task_error_provider>();
}

}  // namespace grain::instrumentation::detail
