#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "grain/detail/task.hpp"

namespace grain::detail {

std::string demangle(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> p(abi::__cxa_demangle(mangled, nullptr, nullptr, &status),
                                           std::free);
  return status == 0 && p ? std::string(p.get()) : std::string(mangled);
}

}  // namespace grain::detail
