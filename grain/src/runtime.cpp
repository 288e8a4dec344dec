#include "grain/runtime.hpp"

#include <cstdio>
#include <cstdlib>

#include "grain/async.hpp"
#include "grain/dashboard/extension.hpp"
#include "grain/distributed/extension.hpp"
#include "grain/instrumentation/extension.hpp"
#include "grain/instrumentation/trace.hpp"
#include "grain/policy/extension.hpp"

namespace grain {

// grain::grain always links the three parts (grain/CMakeLists.txt); a program that wants a
// smaller runtime builds runtime_core with its own list.
std::vector<std::unique_ptr<extension>> default_extensions() {
  std::vector<std::unique_ptr<extension>> e;
  // First: the locality must be known before the others name counters and trace locations;
  // it stops last, after the end of the program across ranks.
  e.push_back(distributed::make_extension());
  e.push_back(instrumentation::make_extension());
  e.push_back(instrumentation::make_trace_extension());
  e.push_back(policy::make_extension());
  // Last: it watches what the others publish (counters, decisions) and stops first.
  e.push_back(dashboard::make_extension());
  return e;
}

runtime::runtime(int& argc, char** argv) {
  try {
    core_ = std::make_unique<runtime_core>(argc, argv, default_extensions());
  } catch (const option_error& e) {
    std::fprintf(stderr, "grain: error: %s\n", e.what());
    std::exit(2);
  } catch (const startup_exit& e) {
    std::exit(e.code);
  }
  serve_unless_root();
}

// Ranks other than 0 do not run main's program: they serve actions until rank 0's has ended
// (like HPX's localities without hpx_main), then end the process.
void runtime::serve_unless_root() {
  if (!distributed::serve_if_not_root(*core_)) return;
  core_->stop();
  core_.reset();
  std::exit(0);
}

runtime::runtime(const std::vector<std::string>& args, bool use_environment)
    : core_(std::make_unique<runtime_core>(args, default_extensions(), use_environment)) {
  serve_unless_root();
}

runtime::~runtime() = default;

int init(std::function<int(int, char**)> fn, int& argc, char** argv) {
  runtime rt(argc, argv);  // returns on rank 0 only
  int rc = grain::async([&] { return fn(argc, argv); }).get();
  rt.stop();
  return rc;
}

int init(std::function<int()> fn, int& argc, char** argv) {
  return init([&](int, char**) { return fn(); }, argc, argv);
}

}  // namespace grain
