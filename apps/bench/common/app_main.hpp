#pragma once
// The main of a grain application (grain-fib, grain-uts-*, grain-loop, grain-cholesky, ...):
//
//   int main(int argc, char** argv) {
//     return bench::app_main(argc, argv, "grain-fib", usage_text, run_main);
//   }
//
// --help (or -h) anywhere prints `usage` and where grain's own options are listed, status 0,
// before any runtime or MPI start (bench::args::help_requested); otherwise run(argc, argv) is
// the program, and an exception that escapes it ends the program through grain::fatal_error:
// "PROGRAM: what" on stderr and status 1, with several ranks every rank at once. By then the
// runtime that `run` started has stopped: a program of several ranks (grain-pingpong,
// grain-coalescing) also catches inside the runtime's scope, so that a rank's error ends every
// rank instead of waiting for the others at the runtime's stop.
#include <exception>

#include "common/app_args.hpp"
#include "grain/distributed/abort_job.hpp"

namespace bench {

template <class Run>
int app_main(int argc, char** argv, const char* program, const char* usage, Run&& run) {
  if (args::help_requested(argc, argv, usage)) return 0;
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    return grain::fatal_error(program, e);
  }
}

}  // namespace bench
