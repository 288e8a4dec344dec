// The sampler thread: every interval, one snapshot of every counter, handed to the listeners.
#include <pthread.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "grain/clock.hpp"
#include "listeners.hpp"
#include "sampler.hpp"

namespace grain::instrumentation {
namespace detail {
namespace {

std::atomic<sampler::impl*> g_active{nullptr};

}  // namespace

struct sampler::impl {
  mutable std::recursive_mutex snap_m;  // guards snap (listeners may call latest())
  counter_snapshot snap;
  std::uint64_t sequence = 0;

  std::mutex m;
  std::condition_variable cv;
  bool stopping = false;
  bool stopped = false;
  std::thread th;
  std::uint64_t interval_ns = 0;

  // Self-measurement: CPU time of the sampler thread, samples taken (for the cost figure).
  std::atomic<bool> has_clock{false};
  clockid_t cpu_clock{};
  std::atomic<std::uint64_t> samples{0};
  std::atomic<bool> thread_done{false};
  std::uint64_t final_cpu = 0, final_wall = 0;  // written before thread_done
  std::uint64_t cpu_base = 0, samples_base = 0, wall_base = 0;

  void take(bool final) {
    grain::detail::refine_tsc_clock();  // keeps now_ns() on CLOCK_MONOTONIC (grain/clock.hpp)
    std::lock_guard lk(snap_m);
    registry().sample(snap);
    snap.sequence = sequence++;
    snap.final = final;
    notify_sample(snap);
    samples.fetch_add(1, std::memory_order_relaxed);
  }

  void run() {
    using clock = std::chrono::steady_clock;
    const auto period = std::chrono::nanoseconds(interval_ns);
    auto next = clock::now() + period;
    std::unique_lock lk(m);
    while (!stopping) {
      if (cv.wait_until(lk, next, [this] { return stopping; })) break;
      lk.unlock();
      take(false);
      lk.lock();
      next += period;
      auto now = clock::now();
      if (next < now) next = now + period;  // fell behind: skip, do not burst
    }
  }
};

class sampler_provider final : public counter_provider {
 public:
  explicit sampler_provider(sampler::impl* s) : s_(s) {
    infos_ = {
        {"/sampler{" + here_instance() + "}/count/samples", "count", "snapshots the sampler took",
         counter_kind::monotonic},
        {"/sampler{" + here_instance() + "}/time/cpu", "ns",
         "CPU time of the sampler thread (taking snapshots, running listeners)",
         counter_kind::monotonic},
        {"/sampler{" + here_instance() + "}/cpu-load", "ratio",
         "sampler thread CPU time / wall time since the last reset (share of one core)",
         counter_kind::average},
    };
  }
  const std::vector<counter_info>& counters() const override { return infos_; }
  void sample(std::uint64_t now, counter_reading* out) override {
    const std::uint64_t n = s_->samples.load(std::memory_order_relaxed);
    out[0] = {static_cast<double>(n - std::min(n, s_->samples_base)), true};
    std::uint64_t cpu = 0;
    if (s_->has_clock.load(std::memory_order_acquire)) {
      cpu = grain::thread_cpu_ns(s_->cpu_clock);
    } else if (s_->thread_done.load(std::memory_order_acquire)) {
      cpu = s_->final_cpu;  // the thread has ended: its total
      now = s_->final_wall;
    } else {
      out[1] = out[2] = {0, false};  // no sampler thread (interval 0)
      return;
    }
    const std::uint64_t used = cpu - std::min(cpu, s_->cpu_base);
    out[1] = {static_cast<double>(used), true};
    const std::uint64_t wall = now > s_->wall_base ? now - s_->wall_base : 0;
    out[2] = wall ? counter_reading{static_cast<double>(used) / static_cast<double>(wall), true}
                  : counter_reading{0, false};
  }
  void reset(std::uint64_t now) override {
    s_->samples_base = s_->samples.load(std::memory_order_relaxed);
    s_->cpu_base =
        s_->has_clock.load(std::memory_order_acquire) ? grain::thread_cpu_ns(s_->cpu_clock) : 0;
    s_->wall_base = now;
  }

 private:
  sampler::impl* s_;
  std::vector<counter_info> infos_;
};

sampler::sampler() : impl_(std::make_unique<impl>()) {}

sampler::~sampler() {
  {
    std::lock_guard lk(impl_->m);
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  if (impl_->th.joinable()) impl_->th.join();
  impl* expected = impl_.get();
  g_active.compare_exchange_strong(expected, nullptr);
}

void sampler::start(std::uint64_t interval_ms) {
  g_active.store(impl_.get());
  impl_->interval_ns = interval_ms * 1'000'000ull;
  impl_->wall_base = now_ns();
  if (interval_ms == 0) return;
  impl_->th = std::thread([s = impl_.get()] {
    pthread_setname_np(pthread_self(), "grain-sampler");
    clockid_t id;
    if (pthread_getcpuclockid(pthread_self(), &id) == 0) {
      s->cpu_clock = id;
      s->cpu_base = 0;
      s->has_clock.store(true, std::memory_order_release);
    }
    s->run();
    s->final_cpu = grain::thread_cpu_ns(CLOCK_THREAD_CPUTIME_ID);
    s->final_wall = now_ns();
    s->has_clock.store(false, std::memory_order_release);
    s->thread_done.store(true, std::memory_order_release);
  });
}

void sampler::stop() {
  {
    std::lock_guard lk(impl_->m);
    if (impl_->stopped) return;
    impl_->stopping = true;
    impl_->stopped = true;
  }
  impl_->cv.notify_all();
  if (impl_->th.joinable()) impl_->th.join();
  impl_->take(true);
}

void sampler::sample_now(bool final) {
  impl_->take(final);
}

counter_snapshot sampler::latest() const {
  std::lock_guard lk(impl_->snap_m);
  return impl_->snap;
}

std::shared_ptr<counter_provider> sampler::provider() {
  return std::make_shared<sampler_provider>(impl_.get());
}

}  // namespace detail

void sample_now() {
  if (auto* s = detail::g_active.load()) s->take(false);
}

counter_snapshot latest_snapshot() {
  auto* s = detail::g_active.load();
  if (!s) return {};
  std::lock_guard lk(s->snap_m);
  return s->snap;
}

}  // namespace grain::instrumentation
