// launch::adaptive's decision. The duration model lives in the adaptive-inlining component;
// until a kind has been measured it is never inlined, so adaptive behaves like async.
#include "grain/async.hpp"

namespace grain::detail {

bool adaptive_should_inline(const char*) noexcept {
  return false;
}

}  // namespace grain::detail
