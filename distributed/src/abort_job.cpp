// grain::abort_job (grain/distributed/abort_job.hpp). An application that meets an error it
// cannot go on from — a collective that failed, a rank that refused its calls — cannot simply
// return from main: the runtime's end waits for every task, and on several ranks for every
// rank to finish, and some task may wait for something that will never come. So this
// locality's extensions flush what they recorded, as they do on a fatal signal, and the job
// ends at once on every rank.
#include "grain/distributed/abort_job.hpp"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>

#include "grain/ext/runtime_core.hpp"
#include "parcelport.hpp"

namespace grain {

void abort_job(int status, const std::string& why) noexcept {
  runtime_core* rt = runtime_core::current();
  distributed::parcelport* port = distributed::parcelport::current();
  const bool several = port && port->distributed();
  try {
    spdlog::error("grain: locality#{}: ending the job with status {}: {}", rt ? rt->locality() : 0,
                  status, why);
    if (rt) {
      const std::vector<extension*> exts = rt->extensions();
      for (auto it = exts.rbegin(); it != exts.rend(); ++it) {
        try {
          (*it)->emergency_stop(*rt);
        } catch (...) {
        }
      }
    }
    spdlog::default_logger()->flush();
  } catch (...) {
  }
  std::fflush(nullptr);
  if (several) port->network()->abort_job(status);
  std::_Exit(status);
}

int fatal_error(const char* program, const std::exception& e, int status) noexcept {
  std::fprintf(stderr, "%s: error: %s\n", program, e.what());
  distributed::parcelport* port = distributed::parcelport::current();
  if (port && port->distributed())
    abort_job(status, std::string(program) + " cannot go on after that error");
  return status;
}

}  // namespace grain
