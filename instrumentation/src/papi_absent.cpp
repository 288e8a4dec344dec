// A build without PAPI (CMake -DGRAIN_WITH_PAPI=OFF, or libpapi-dev missing when configured):
// the same interface as papi.cpp, and every use says PAPI is not built in.
#if !GRAIN_WITH_PAPI
#include "grain/options.hpp"
#include "papi.hpp"

namespace grain::instrumentation::detail {
namespace {

const char* const not_built_in =
    "PAPI is not built in: grain was configured without it (GRAIN_WITH_PAPI=OFF; install "
    "libpapi-dev and configure again for hardware counters)";

}  // namespace

struct papi_session::impl {};

bool papi_init(std::string* error) {
  if (error) *error = not_built_in;
  return false;
}

std::vector<papi_event_status> papi_check(const std::vector<std::string>& events) {
  std::vector<papi_event_status> out;
  out.reserve(events.size());
  for (const std::string& e : events) out.push_back({e, false, not_built_in});
  return out;
}

papi_session::papi_session(const std::vector<std::string>&, runtime_core&) {
  throw option_error(std::string("--grain:papi: ") + not_built_in);
}

papi_session::~papi_session() = default;

std::shared_ptr<counter_provider> papi_session::provider() {
  return nullptr;
}

const std::vector<papi_event_status>& papi_session::status() const noexcept {
  static const std::vector<papi_event_status> none;
  return none;
}

}  // namespace grain::instrumentation::detail
#endif  // !GRAIN_WITH_PAPI
