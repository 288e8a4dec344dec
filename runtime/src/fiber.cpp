#include "fiber.hpp"

#include "grain/detail/config.hpp"

#if GRAIN_TSAN
extern "C" {
void* __tsan_get_current_fiber(void);
void* __tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void* fiber);
void __tsan_switch_to_fiber(void* fiber, unsigned flags);
}
#endif
#if GRAIN_ASAN
extern "C" {
void __sanitizer_start_switch_fiber(void** fake_stack_save, const void* bottom, std::size_t size);
void __sanitizer_finish_switch_fiber(void* fake_stack_save, const void** bottom_old,
                                     std::size_t* size_old);
void __asan_unpoison_memory_region(void const volatile* addr, std::size_t size);
}
#endif

namespace grain::detail {

void fiber_init(fiber& f, const stack& stk, void (*entry)(bctx::transfer_t)) {
#if GRAIN_ASAN
  // A recycled stack still carries the redzone poison of the frames it held when its last
  // fiber was abandoned (a parked loop fiber is re-initialised, not unwound): new frames would
  // land on it and read as stack-buffer-overflows.
  __asan_unpoison_memory_region(stk.base, stk.size);
#endif
  f.stk = stk;
  f.ctx = bctx::make_fcontext(stk.top(), stk.size, entry);
  f.asan_bottom = stk.base;
  f.asan_size = stk.size;
#if GRAIN_TSAN
  f.tsan_fiber = __tsan_create_fiber(0);
#endif
}

void fiber_init_thread(fiber& f) {
  f.stk = {};
#if GRAIN_TSAN
  f.tsan_fiber = __tsan_get_current_fiber();
#endif
}

void fiber_destroy(fiber& f) {
#if GRAIN_TSAN
  if (f.stk.base && f.tsan_fiber) __tsan_destroy_fiber(f.tsan_fiber);
#endif
  f.tsan_fiber = nullptr;
}

#if GRAIN_ASAN
namespace {
thread_local void* asan_fake_stack = nullptr;
}
#endif

void fiber_arrived(bctx::transfer_t t) {
  auto* rec = static_cast<switch_record*>(t.data);
  rec->from->ctx = t.fctx;
  // The stack we left no longer runs and the one we are on does: a slab stack is guarded
  // exactly while it runs (stack_pool.hpp). Before the action, which may hand `from` on.
  stack_pool::open_guard(rec->from->stk);
  stack_pool::protect_guard(rec->to->stk);
#if GRAIN_ASAN
  // Learns the bounds of the stack we came from (the OS thread's own on first use).
  __sanitizer_finish_switch_fiber(asan_fake_stack, &rec->from->asan_bottom, &rec->from->asan_size);
#endif
  if (rec->action) rec->action(rec->arg, rec->from);
}

void fiber_switch(fiber* from, fiber* to, switch_record& rec) {
  rec.from = from;
  rec.to = to;
#if GRAIN_ASAN
  __sanitizer_start_switch_fiber(&asan_fake_stack, to->asan_bottom, to->asan_size);
#endif
#if GRAIN_TSAN
  __tsan_switch_to_fiber(to->tsan_fiber, 0);
#endif
  bctx::transfer_t t = bctx::jump_fcontext(to->ctx, &rec);
  fiber_arrived(t);
}

}  // namespace grain::detail
