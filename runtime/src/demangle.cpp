#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "grain/detail/task.hpp"
#include "scheduler.hpp"

namespace grain::detail {
namespace {

std::string demangle_here(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> p(abi::__cxa_demangle(mangled, nullptr, nullptr, &status),
                                           std::free);
  return status == 0 && p ? std::string(p.get()) : std::string(mangled);
}

}  // namespace

std::string demangle(const char* mangled) {
  // __cxa_demangle recurses over the structure of the name: a long template type (a parallel
  // loop's runner, say) needs more stack than a user thread has (64 KiB by default, and
  // sanitizers inflate every frame). On a user thread the demangler runs on a short-lived OS
  // thread with a full-size stack; this happens once per task type.
  if (current_worker() == nullptr) return demangle_here(mangled);
  std::string out;
  std::thread([&] { out = demangle_here(mangled); }).join();
  return out;
}

}  // namespace grain::detail
