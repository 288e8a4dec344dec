#pragma once
#include <cstddef>

#ifndef GRAIN_TIMING
#define GRAIN_TIMING 1
#endif

#if defined(__SANITIZE_THREAD__)
#define GRAIN_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GRAIN_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define GRAIN_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GRAIN_ASAN 1
#endif
#endif

#define GRAIN_LIKELY(x) __builtin_expect(!!(x), 1)
#define GRAIN_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define GRAIN_NOINLINE __attribute__((noinline))
#define GRAIN_ALWAYS_INLINE inline __attribute__((always_inline))

namespace grain::detail {
inline constexpr std::size_t cache_line = 64;
}
