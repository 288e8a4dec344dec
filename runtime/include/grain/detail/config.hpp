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

// GRAIN_FRESH_TLS_READER(name, type, symbol): `inline type name() noexcept` reading the
// pointer-sized thread_local whose assembler name is `symbol`, afresh at every call. A user
// thread can resume on another OS thread, and with a plain thread_local access in inline code
// the compiler may keep the slot's address across a call that suspends and then read the old
// thread's slot. The reader is one volatile %fs-relative load (initial-exec model, a constant
// offset once linked into an executable) with a memory clobber: never merged with another
// read, never moved across a call. Defined on x86-64 only (GRAIN_HAS_FRESH_TLS_READER);
// elsewhere callers use an out-of-line function, whose every call reads its thread's slot.
#if defined(__x86_64__)
#define GRAIN_HAS_FRESH_TLS_READER 1
#define GRAIN_FRESH_TLS_READER(name, type, symbol)                           \
  inline type name() noexcept {                                              \
    type v;                                                                  \
    asm volatile("movq " symbol "@gottpoff(%%rip), %0\n\tmovq %%fs:(%0), %0" \
                 : "=r"(v)                                                   \
                 :                                                           \
                 : "memory");                                                \
    return v;                                                                \
  }
#else
#define GRAIN_HAS_FRESH_TLS_READER 0
#endif

namespace grain::detail {
inline constexpr std::size_t cache_line = 64;
}
