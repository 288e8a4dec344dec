#include "hooks_internal.hpp"

namespace grain {
namespace detail {
runtime_hooks g_hooks;
}
runtime_hooks& hooks() noexcept {
  return detail::g_hooks;
}
}  // namespace grain
