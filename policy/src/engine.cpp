// The public engine: what its callers see of the parts in engine_impl.hpp. Rules made from
// C++ (add_policy, add_periodic_policy, add_tuner) are made here.
#include <filesystem>

#include "engine_impl.hpp"
#include "grain/clock.hpp"
#include "lua_api.hpp"
#include "tuner.hpp"

namespace grain::policy {

namespace {

module_dirs initial_dirs(const engine_options& o) {
  std::vector<std::string> wanted = o.module_dirs;
  if (wanted.empty()) {
#ifdef GRAIN_POLICY_SOURCE_DIR
    wanted.push_back(GRAIN_POLICY_SOURCE_DIR);
#endif
#ifdef GRAIN_POLICY_INSTALL_DIR
    wanted.push_back(GRAIN_POLICY_INSTALL_DIR);
#endif
  }
  module_dirs d;
  for (auto& w : wanted) d.add(w);
  return d;
}

// Events the engine generates itself; the same names arriving from the application are
// ignored (they would run the lifecycle rules twice).
bool reserved_event(std::string_view n) {
  return n == "start" || n == "stop" || n == "sample" || n == "tuned";
}

std::string ms_text(std::chrono::milliseconds p) {
  return "every " + std::to_string(p.count()) + " ms";
}

std::unique_ptr<rule> cpp_rule(trigger when, cpp_policy fn, std::string name,
                               std::string trigger_text) {
  auto r = std::make_unique<rule>(std::move(when), std::move(fn));
  r->info.name = std::move(name);
  r->info.trigger = std::move(trigger_text);
  return r;
}

}  // namespace

engine::impl::impl(engine_options o)
    : opts(std::move(o)),
      dirs(initial_dirs(opts)),
      watch(opts.time_limit),
      lua(*this, opts, dirs) {}

void engine::impl::load(std::string_view code, const std::string& chunk, bool is_file) {
  if (watch.abandoned.load()) throw policy_error(chunk + ": the policy thread was abandoned");
  std::lock_guard lk(state_m);
  decisions.load_name = basename_of(chunk);
  decisions.reads.clear();
  try {
    lua.run_chunk(code, chunk, is_file);
  } catch (...) {
    decisions.load_name.clear();
    throw;
  }
  decisions.load_name.clear();
}

engine::engine(engine_options opts) : impl_(std::make_unique<impl>(std::move(opts))) {}

engine::~engine() {
  try {
    stop();
  } catch (...) {
  }
  // The abandoned thread may still run in the impl and its Lua state: they stay.
  if (impl_->watch.abandoned.load()) (void)impl_.release();
}

void engine::load_file(const std::string& path) {
  if (impl_->opts.add_policy_dirs) {
    std::string dir = std::filesystem::path(path).parent_path().string();
    impl_->dirs.add(dir.empty() ? "." : dir);
  }
  impl_->load({}, path, true);
}

void engine::load_string(std::string_view code, std::string_view chunk_name) {
  impl_->load(code, std::string(chunk_name), false);
}

int engine::add_policy(std::string event, cpp_policy fn, std::string name) {
  std::string text = "on " + event;
  if (name.empty()) name = "cpp:" + event;
  return impl_->queue_rule(
      cpp_rule(event_trigger{std::move(event)}, std::move(fn), std::move(name), std::move(text)));
}

int engine::add_periodic_policy(std::chrono::milliseconds period, cpp_policy fn, std::string name) {
  if (period.count() < 1) throw std::invalid_argument("policy period must be >= 1 ms");
  periodic_trigger e;
  e.period_ns = static_cast<std::uint64_t>(period.count()) * 1'000'000ull;
  e.next_due = now_ns() + e.period_ns;
  if (name.empty()) name = "cpp:" + ms_text(period);
  return impl_->queue_rule(cpp_rule(e, std::move(fn), std::move(name), ms_text(period)));
}

int engine::add_tuner(tune_request req) {
  if (req.name.empty()) req.name = "tune";
  return impl_->queue_rule(make_tuner_rule(std::move(req)));
}

void engine::remove_rule(int id) {
  impl_->run_or_queue([this, id] { impl_->remove(id); });
}

void engine::start(double workers) {
  policy_thread& t = impl_->thread;
  if (t.running.load() || t.started_once) return;
  t.started_once = true;
  {
    std::lock_guard lk(impl_->inputs.m);
    impl_->inputs.stopping = false;
    queued q;
    q.kind = queued::event;
    q.ev.time_ns = now_ns();
    q.ev.name = "start";
    q.ev.payload = {{"workers", workers}};
    impl_->inputs.items.push_front(std::move(q));
  }
  // Periodic rules count from now.
  {
    std::lock_guard lk(impl_->state_m);
    const std::uint64_t now = now_ns();
    for (auto& r : impl_->rules)
      if (periodic_trigger* e = r->schedule()) e->next_due = now + e->period_ns;
  }
  t.running.store(true);
  t.th = std::thread([p = impl_.get()] { p->thread_main(); });
}

void engine::stop() {
  policy_thread& t = impl_->thread;
  if (!t.th.joinable()) return;
  {
    std::lock_guard lk(impl_->inputs.m);
    queued q;
    q.kind = queued::event;
    q.ev.time_ns = now_ns();
    q.ev.name = "stop";
    impl_->inputs.items.push_back(std::move(q));
    impl_->inputs.stopping = true;
  }
  impl_->inputs.cv.notify_all();
  if (!impl_->wait_thread_end()) {
    t.th.detach();
    t.running.store(false);
    impl_->inputs.done_cv.notify_all();
    return;
  }
  t.th.join();
  t.running.store(false);
  // Anything that arrived during the last moments.
  impl_->drain();
}

void engine::interrupt() noexcept {
  impl_->interrupted.store(true);
  impl_->lua.stop_requested.store(true, std::memory_order_relaxed);
}

bool engine::running() const noexcept {
  return impl_->thread.running.load();
}

void engine::feed_sample(const instrumentation::counter_snapshot& s) {
  input_queue& in = impl_->inputs;
  std::lock_guard lk(in.m);
  in.slot = s;  // reuses the slot's storage while the layout stays the same
  if (!in.sample_queued) {
    in.sample_queued = true;
    queued q;
    q.kind = queued::sample;
    in.push(std::move(q));
  }
}

void engine::feed_event(const instrumentation::app_event& e) {
  if (reserved_event(e.name)) return;
  input_queue& in = impl_->inputs;
  std::lock_guard lk(in.m);
  if (in.items.size() >= impl_->opts.max_queued_events) {
    in.dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  queued q;
  q.kind = queued::event;
  q.ev = e;
  in.push(std::move(q));
}

void engine::pump() {
  if (impl_->watch.abandoned.load()) return;
  if (impl_->thread.running.load()) {
    input_queue& in = impl_->inputs;
    std::unique_lock lk(in.m);
    const std::uint64_t ticket = ++in.sync_issued;
    queued q;
    q.kind = queued::sync;
    q.sync_ticket = ticket;
    in.push(std::move(q));
    impl_->wait_ticket(lk, ticket);
    return;
  }
  impl_->drain();
  std::lock_guard lk(impl_->state_m);
  impl_->run_due_timers();
}

void engine::run_periodic_now() {
  if (impl_->watch.abandoned.load()) return;
  std::lock_guard lk(impl_->state_m);
  for (auto& r : impl_->rules)
    if (periodic_trigger* e = r->schedule()) e->next_due = 0;
  impl_->run_due_timers();
}

std::vector<rule_info> engine::rules() const {
  if (impl_->watch.abandoned.load()) return impl_->watch.abandoned_rules;
  // The policy thread holds the lock while it handles an input: wait for it, but not for a
  // rule stuck past its time limit. (Polled: ThreadSanitizer misreads the timed lock.)
  std::unique_lock lk(impl_->state_m, std::try_to_lock);
  const std::uint64_t bound = now_ns() + impl_->watch.stuck_after_ns();
  while (!lk.owns_lock()) {
    if (now_ns() >= bound) {
      rule_info info;
      if (impl_->watch.stuck(&info).empty()) return {};
      info.disabled = false;
      info.last_error = "running past its time limit";
      return {info};
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    (void)lk.try_lock();
  }
  std::vector<rule_info> v;
  v.reserve(impl_->rules.size());
  for (auto& r : impl_->rules) v.push_back(r->info);
  return v;
}

std::uint64_t engine::dropped_events() const noexcept {
  return impl_->inputs.dropped.load();
}

std::uint64_t engine::thread_cpu_ns() const noexcept {
  const policy_thread& t = impl_->thread;
  if (t.have_clock.load(std::memory_order_acquire)) return grain::thread_cpu_ns(t.cpu_clock);
  return t.final_cpu;
}

std::size_t engine::lua_memory() const noexcept {
  return impl_->lua.memory();
}

}  // namespace grain::policy
