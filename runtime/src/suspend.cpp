// Leaving a running user thread (suspend.hpp).
#include "suspend.hpp"

#include "phase_timing.hpp"

namespace grain::detail {

void suspend_current(worker* w, void (*action)(void*, fiber*), void* arg) {
  task_base* t = w->current_task;
  end_phase(w, t->info, false, 0);
  w->sched->suspended.fetch_add(1, std::memory_order_relaxed);
  fiber* self = w->current;
  self->task = t;
  self->pool = static_cast<std::int16_t>(w->home->index);
  self->prio = t->prio;
  fiber* next = w->sched->fibers().get(w->free_fibers, *w->stats);
  w->current = next;
  w->current_task = nullptr;
  switch_record rec;
  rec.action = action;
  rec.arg = arg;
  fiber_switch(self, next, rec);
}

}  // namespace grain::detail
