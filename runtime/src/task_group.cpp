// grain::task_group's counting and waiting (grain/task_group.hpp). The owner's user thread
// counts what it spawns and what it runs inline in plain fields; everything else — a task
// stolen or run by the loop, a run() from inside the group — moves one shared word, which also
// holds the owner's "asleep" flag, so a finisher learns in its one read-modify-write whether
// it must wake the owner, and touches the group no further when it need not.
#include <mutex>
#include <stdexcept>

#include "grain/task_group.hpp"
#include "scheduler.hpp"
#include "spawn_path.hpp"

namespace grain::detail {

void group_task_base::run_entry(task_base* t) {
  auto* self = static_cast<group_task_base*>(t);
  task_group_core* g = self->group;
  const bool by_owner = self->by_owner;
  self->invoke(self, true);  // self is gone
  if (by_owner)
    ++g->done_local_;
  else
    g->finish_remote();
}

task_group_core::task_group_core() noexcept : owner_guid_(current_guid()) {}

void task_group_core::spawn(group_task_base* t) {
  worker* w = current_worker();
  set_ids(w, t->info);
  // Counted in before the push: a thief may finish it at once.
  const bool local = owner_guid_ != 0 && t->info.parent_guid == owner_guid_;
  if (local)
    ++spawned_local_;
  else
    shared_.fetch_add(one_task, std::memory_order_relaxed);
  try {
    spawn_from(w, t);
  } catch (...) {  // the runtime stopped meanwhile: nothing was queued
    if (local)
      --spawned_local_;
    else
      shared_.fetch_sub(one_task, std::memory_order_relaxed);
    t->invoke(t, false);
    throw;
  }
}

void task_group_core::finish_remote() noexcept {
  const std::uint64_t v = shared_.fetch_sub(one_task, std::memory_order_acq_rel) - one_task;
  // While the owner sleeps the word counts what is left (register_waiter rebased it), so the
  // value this finisher got says whether it finished the group. Nothing else of the group may
  // be read first: once another finisher has woken the owner, the group may be gone.
  if (GRAIN_UNLIKELY(v == asleep_bit)) sleeper_->notify();
}

bool task_group_core::register_waiter(waiter* n) noexcept {
  // Done when the remote count reaches target; asleep, the word holds (count - target) and
  // bit 0, so that the finisher that brings it to 0 knows without reading target.
  const std::int64_t target = done_local_ - spawned_local_;
  sleeper_ = n;
  std::uint64_t v = shared_.load(std::memory_order_acquire);
  for (;;) {
    const std::int64_t left = count_in(v) - target;
    if (left == 0) return false;  // all finished meanwhile: do not sleep
    const std::uint64_t asleep = (static_cast<std::uint64_t>(left) << 1) | asleep_bit;
    if (shared_.compare_exchange_weak(v, asleep, std::memory_order_acq_rel,
                                      std::memory_order_acquire))
      return true;
  }
}

void task_group_core::help(worker* w) {
  // A spawn-all-then-join owner finds its tasks at the bottom of its own queue, newest first;
  // it runs them, and any other task it spawned itself, as future::get does.
  if (stack_too_deep_to_inline(w)) return;
  run_children_inline(
      w, static_cast<int>(priority::normal), owner_guid_,
      [this](task_base* p) {
        if (p->run_fn != &group_task_base::run_entry ||
            static_cast<group_task_base*>(p)->group != this)
          return false;
        static_cast<group_task_base*>(p)->by_owner = true;  // counted done without an atomic
        return true;
      },
      [this] { return !done(); });
}

void task_group_core::wait_for_all(bool check_owner) {
  worker* w = current_worker();
  const bool owner = (w && w->current_task ? w->current_task->info.guid : 0) == owner_guid_;
  if (check_owner && !owner)
    throw std::logic_error(
        "grain::task_group::wait: only the task or thread that constructed the group may wait "
        "for it");
  if (owner && owner_guid_ != 0 && !done()) help(w);
  while (!done()) {
    struct enqueue {
      task_group_core* g;
      bool operator()(waiter* n) noexcept { return g->register_waiter(n); }
    } e{this};
    park(e);
    if ((shared_.load(std::memory_order_acquire) & asleep_bit) != 0) {
      // Woken by the last finisher: nobody else touches the word now. Back to the remote
      // count that means done (the owner's counts did not move while it slept).
      shared_.store(static_cast<std::uint64_t>(done_local_ - spawned_local_) << 1,
                    std::memory_order_relaxed);
    }
  }
  if (has_error_.load(std::memory_order_acquire)) {
    std::exception_ptr e;
    {
      std::lock_guard lock(error_lock_);
      e = std::exchange(error_, nullptr);
      has_error_.store(false, std::memory_order_relaxed);
    }
    std::rethrow_exception(e);
  }
}

void task_group_core::wait() {
  wait_for_all(true);
}

void task_group_core::wait_in_destructor() noexcept {
  // Whoever destroys the group waits: no task may outlive the frame its captures refer to.
  try {
    wait_for_all(false);
  } catch (...) {
    report_unread_exception(std::current_exception());
  }
}

void task_group_core::store_error(std::exception_ptr e) noexcept {
  {
    std::lock_guard lock(error_lock_);
    if (!error_) {
      error_ = std::move(e);
      has_error_.store(true, std::memory_order_release);
      return;
    }
  }
  report_unread_exception(e);  // wait() rethrows the first one only
}

}  // namespace grain::detail
