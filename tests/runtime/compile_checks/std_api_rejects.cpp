// What std's futures and semaphore API rejects at compile time, and grain's too. ctest compiles
// this file (tests/CMakeLists.txt, StdApiCompile.*): as is it compiles; with one of the macros
// it must fail for the reason named.
#include "grain/async.hpp"
#include "grain/lcos/counting_semaphore.hpp"

int main() {
#if defined(GRAIN_CHECK_DISCARDED_ASYNC)
  // async is [[nodiscard]]: a dropped future is a warning (an error with -Werror).
  grain::async(grain::launch::deferred, [] { return 1; });
#elif defined(GRAIN_CHECK_NEGATIVE_SEMAPHORE)
  // A negative least maximum is ill-formed.
  grain::counting_semaphore<-1> s(0);
#else
  (void)grain::async(grain::launch::deferred, [] { return 1; });
  grain::counting_semaphore<1> s(0);
  (void)s;
#endif
  return 0;
}
