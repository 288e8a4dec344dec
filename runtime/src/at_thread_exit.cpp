// Actions deferred to the end of the calling task or OS thread (grain/detail/at_thread_exit.hpp).
// A task's end is the runtime's phase_end hook with `terminated` set: every path that finishes
// a task (the loop, an inline run, an adaptive call run inline) reports it there, after the
// task's callable returned and its result was published. The hook is chained in on the first
// action registered by a task and stays: until then no task pays for it, afterwards every
// task's end pays a call and one relaxed load unless an action waits in its GUID's bucket.
#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "grain/detail/at_thread_exit.hpp"
#include "grain/detail/task.hpp"
#include "grain/ext/hooks.hpp"

namespace grain::detail {

namespace {

// FIFO list of actions: registration order is the order they run in.
struct action_list {
  exit_action* head = nullptr;
  exit_action* tail = nullptr;
  void push(exit_action* a) noexcept {
    a->next = nullptr;
    (tail ? tail->next : head) = a;
    tail = a;
  }
};

void run_all(exit_action* a) noexcept {
  while (a) {
    exit_action* next = a->next;
    a->run();
    a = next;
  }
}

// The OS thread's actions, run by this object's destructor when the thread exits (with the
// thread's other thread_local objects). An action may register another one: it runs too.
struct thread_actions {
  action_list list;
  ~thread_actions() {
    while (list.head) {
      exit_action* a = list.head;
      list = {};
      run_all(a);
    }
  }
};
thread_local thread_actions tls_actions;

std::mutex g_mutex;
std::unordered_map<std::uint64_t, action_list> g_by_task;  // by task GUID, under g_mutex
// Actions in g_by_task by GUID bucket: a task's end takes g_mutex only when its bucket holds
// some, so tasks that registered nothing never meet on the lock while others' actions wait.
constexpr std::size_t buckets = 1024;
std::atomic<std::uint32_t> g_pending[buckets];
std::atomic<std::uint32_t>& pending_of(std::uint64_t guid) noexcept {
  return g_pending[guid % buckets];
}

void on_phase_end(unsigned worker, const task_info& t, bool terminated, std::uint64_t ts);
constinit hook_chain g_chain{runtime_hooks{.phase_end = &on_phase_end}};

void on_phase_end(unsigned worker, const task_info& t, bool terminated, std::uint64_t ts) {
  if (auto prev = g_chain.prev(&runtime_hooks::phase_end)) prev(worker, t, terminated, ts);
  // The task that registered read its bucket's increment itself before it could end, and a
  // task resumed elsewhere carries what it wrote: a relaxed load is enough.
  if (!terminated || pending_of(t.guid).load(std::memory_order_relaxed) == 0) return;
  exit_action* actions = nullptr;
  {
    std::lock_guard lk(g_mutex);
    auto it = g_by_task.find(t.guid);
    if (it == g_by_task.end()) return;
    actions = it->second.head;
    g_by_task.erase(it);
    std::uint32_t n = 0;
    for (exit_action* a = actions; a; a = a->next) ++n;
    pending_of(t.guid).fetch_sub(n, std::memory_order_relaxed);
  }
  run_all(actions);
}

}  // namespace

void at_thread_exit(exit_action* a) noexcept {
  const std::uint64_t task = current_guid();
  if (task == 0) {
    tls_actions.list.push(a);
    return;
  }
  try {
    g_chain.install();  // a no-op once installed
    std::lock_guard lk(g_mutex);
    g_by_task[task].push(a);
    pending_of(task).fetch_add(1, std::memory_order_relaxed);
  } catch (...) {
    a->run();  // no memory to remember it: the result is delivered early rather than never
  }
}

std::size_t task_exit_actions_pending() noexcept {
  std::size_t n = 0;
  for (const auto& b : g_pending) n += b.load(std::memory_order_relaxed);
  return n;
}

}  // namespace grain::detail
