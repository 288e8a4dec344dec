#pragma once
// grain::runtime: start the runtime at the top of main; it stops (waiting for every task)
// when it goes out of scope.
//
//   int main(int argc, char** argv) {
//     grain::runtime rt(argc, argv);   // consumes the --grain:... arguments
//     ...
//   }
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "grain/ext/runtime_core.hpp"

namespace grain {

class runtime {
 public:
  // Command-line form: on a bad --grain: option prints the error and the valid options and
  // exits with status 2; --grain:list-... options print and exit 0. Started by mpirun, the
  // constructor returns on rank 0 only: the other ranks serve actions until rank 0's runtime
  // ends, then the process exits with status 0 (docs/distributed.md).
  runtime(int& argc, char** argv);
  // Programmatic form (tests, embedding): throws option_error / startup_exit instead.
  explicit runtime(const std::vector<std::string>& args = {}, bool use_environment = true);
  ~runtime();
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;

  runtime_core& core() noexcept { return *core_; }
  unsigned num_workers() const noexcept { return core_->num_workers(); }
  // Wait for every task, stop extensions (flush traces, write the summary) and workers.
  void stop() { core_->stop(); }

 private:
  void serve_unless_root();
  std::unique_ptr<runtime_core> core_;
};

// Run fn as the first task on a started runtime and return its result (HPX's hpx::init).
int init(std::function<int(int, char**)> fn, int& argc, char** argv);
int init(std::function<int()> fn, int& argc, char** argv);

// The extensions grain::runtime assembles (instrumentation, tracing, policy), in start order.
std::vector<std::unique_ptr<extension>> default_extensions();

}  // namespace grain
