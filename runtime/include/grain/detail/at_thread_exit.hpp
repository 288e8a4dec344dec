#pragma once
// Work deferred to the end of the caller: the *_at_thread_exit operations of promise,
// packaged_task and condition_variable. std defers them to the end of the calling OS thread;
// in a grain task, which shares its worker thread with other tasks and may move between
// workers, the "thread" is the task itself (runtime/src/at_thread_exit.cpp):
//  - called inside a task, an action runs when that task finishes: after its callable has
//    returned and its own result has been published, on the worker that ran its end. A task
//    run inline (a waited-for child, launch::sync, deferred or fork, an adaptive call that
//    runs inline) is a task of its own; a call launch::adaptive turned into a plain function
//    call belongs to the task that made it.
//  - called outside any task (main, a std::thread, a deferred task run by a thread that is not
//    a worker), an action runs when that OS thread exits, as std's do.
// Actions run in the order they were registered, and must neither throw nor wait.
#include <memory>
#include <utility>

namespace grain::detail {

struct exit_action {
  exit_action* next = nullptr;
  void (*run_fn)(exit_action*) noexcept = nullptr;  // does the work and deletes the action
  void run() noexcept { run_fn(this); }
};

// Takes ownership of `a`; a->run() is called once the caller (task or thread) has finished.
// Where registering fails (no memory for the bookkeeping), the action runs at once.
void at_thread_exit(exit_action* a) noexcept;

// How many actions wait for the end of a task, over all tasks (for tests).
std::size_t task_exit_actions_pending() noexcept;

// An action holding `fn` (a noexcept callable), deleted after it ran.
template <class F>
struct exit_call final : exit_action {
  F fn;
  explicit exit_call(F&& f) : fn(std::move(f)) {
    run_fn = [](exit_action* a) noexcept {
      std::unique_ptr<exit_call> self(static_cast<exit_call*>(a));
      self->fn();
    };
  }
};

template <class F>
void call_at_thread_exit(F fn) {
  static_assert(std::is_nothrow_invocable_v<F&>, "an exit action must not throw");
  at_thread_exit(new exit_call<F>(std::move(fn)));
}

}  // namespace grain::detail
