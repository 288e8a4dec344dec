// Parcels in and out (parcelport.hpp): calls become parcels, received calls become tasks,
// answers set the callers' futures. Refused parcels (unknown action, other signature, bad
// payload) are logged naming the action and the ranks, answered with an error when a caller
// waits, and the locality goes on serving.
#include "parcelport.hpp"

#include <spdlog/spdlog.h>

#include <atomic>

#include "compact_parcel.hpp"
#include "grain/async.hpp"
#include "grain/clock.hpp"
#include "grain/detail/waiter.hpp"

namespace grain::distributed {

namespace {
std::atomic<parcelport*> g_current{nullptr};

// The error of a call waiting on, or made to, a rank that died.
std::string call_to_dead_rank(const detail::action_info& a, const std::string& why) {
  return "action '" + a.name + "': " + why;
}

// When a call leaves, for /parcels/time/average-latency: on one call in 16 of each thread (its
// first, then every 16th), 0 on the others. The two clock reads of a timed call cost ~70 ns of
// a ~1 µs round trip on a VM (docs/design/departures.md).
std::uint64_t sampled_send_time() noexcept {
  thread_local std::uint32_t calls = 0;
  return (calls++ & 15u) == 0 ? now_ns() : 0;
}
}  // namespace

parcelport::parcelport(std::unique_ptr<transport> t) : net_(std::move(t)) {
  if (net_) {
    rank_ = net_->rank();
    size_ = net_->size();
  }
  deliver_ = [this](std::uint32_t s, message_tag tag, std::span<const char> b,
                    std::vector<char>* owner) { on_message(s, tag, b, owner); };
  if (!distributed()) return;
  std::vector<std::uint64_t> fingerprints;
  for (const process_identity& p : net_->identities()) fingerprints.push_back(p.actions);
  if (!compact::same_program(fingerprints) && rank_ == 0)
    spdlog::warn(
        "grain: the ranks' action tables differ (a different program on each rank?): parcels "
        "name their actions by id, in the full format, and a call of an action a rank lacks is "
        "refused there");
  compact_possible_ = compact::usable(fingerprints, net_->max_tag());
  compact_ = compact_possible_;
  coalescer_ = std::make_unique<coalescer>(
      rank_, size_, [this](std::uint32_t dest, std::vector<char>&& msg, std::size_t parcels) {
        // Coalesced parcels count as sent when their message leaves.
        counts_.count_sent(parcels, msg.size());
        net_->send(dest, message_tag::parcels, std::move(msg), static_cast<std::uint32_t>(parcels));
      });
}

parcelport::~parcelport() {
  make_current(false);
}

parcelport* parcelport::current() noexcept {
  return g_current.load(std::memory_order_acquire);
}

bool parcelport::make_current_if_none() noexcept {
  parcelport* expected = nullptr;
  return g_current.compare_exchange_strong(expected, this, std::memory_order_acq_rel);
}

void parcelport::make_current(bool on) noexcept {
  parcelport* expected = on ? nullptr : this;
  g_current.compare_exchange_strong(expected, on ? this : nullptr, std::memory_order_acq_rel);
}

namespace {

// The message being built on this thread (one at a time: a serialiser that posts takes a
// vector of its own). Reused, so that a small message costs no allocation.
struct scratch_message {
  std::vector<char> bytes;
  bool busy = false;
};
thread_local scratch_message t_scratch;
// A scratch message that must be queued is copied up to this size (the thread keeps its
// buffer) and given away above it (the next message allocates anew).
constexpr std::size_t copy_queued_up_to = 4096;

}  // namespace

void parcelport::send_built(std::uint32_t dest, std::vector<char>& msg, bool scratch,
                            message_tag tag) {
  counts_.count_sent(1, msg.size());
  if (net_->send_reusing(dest, tag, msg)) return;
  if (scratch && msg.size() <= copy_queued_up_to)
    net_->send(dest, tag, std::vector<char>(msg.begin(), msg.end()));
  else
    net_->send(dest, tag, std::move(msg));
}

template <class Build>
void parcelport::build_and_send(std::uint32_t dest, const Build& build) {
  if (t_scratch.busy) {
    std::vector<char> msg;
    const message_tag tag = build(msg);
    send_built(dest, msg, false, tag);
    return;
  }
  t_scratch.busy = true;
  struct release {
    ~release() { t_scratch.busy = false; }
  } done;
  std::vector<char>& msg = t_scratch.bytes;
  msg.clear();
  const message_tag tag = build(msg);
  send_built(dest, msg, true, tag);
}

void parcelport::send_parcel(std::uint32_t dest, const parcel& p,
                             const std::function<void(std::vector<char>&)>& tamper) {
  // Calls and posts of a coalesced action may wait for company; answers never do (a caller
  // waits for them), nor tampered test messages.
  if (coalescer_ && !tamper && (p.kind == parcel_kind::call || p.kind == parcel_kind::post) &&
      coalescer_->submit(dest, p))
    return;
  build_and_send(dest, [&](std::vector<char>& msg) {
    msg.reserve(message_overhead() + parcel_overhead() + p.payload.size());
    begin_message(msg);
    append_parcel(msg, p);
    if (tamper) tamper(msg);
    return message_tag::parcels;
  });
}

std::string parcelport::dead_reason_of(std::uint32_t dest) {
  std::lock_guard lock(calls_mutex_);
  const auto it = dead_.find(dest);
  return it == dead_.end() ? std::string() : it->second;
}

void parcelport::send_action(std::uint32_t dest, const detail::action_info& a,
                             std::vector<char> args, detail::response_handler on_response,
                             const std::function<void(std::vector<char>&)>& tamper) {
  parcel p;
  p.kind = on_response ? parcel_kind::call : parcel_kind::post;
  p.source = rank_;
  p.action = a.id;
  p.signature = a.signature;
  p.payload = std::move(args);
  if (const std::string why = dead_reason(dest); !why.empty()) {
    if (on_response)
      on_response(false, call_to_dead_rank(a, why));
    else
      spdlog::error("grain: locality#{}: a post of '{}' to {} was dropped", rank_, a.name, why);
    return;
  }
  if (on_response) p.continuation = wait_for_answer(dest, a, std::move(on_response));
  send_parcel(dest, p, tamper);
}

void parcelport::send_one(std::uint32_t dest, parcel_kind kind, const detail::action_info& a,
                          std::uint64_t continuation, const detail::args_writer& write) {
  const int tag = compact_tag(kind, a, continuation);
  build_and_send(dest, [&](std::vector<char>& msg) {
    if (tag != 0) {
      write(msg);
      if (msg.size() <= compact::max_payload) return static_cast<message_tag>(tag);
      // Too big to be compact: the headers go in front (a copy the payload's size already
      // outweighs; its send costs more).
      std::vector<char> full;
      single_parcel_message(full, kind, rank_, a.id, a.signature, continuation, msg);
      msg.swap(full);
      return message_tag::parcels;
    }
    begin_message(msg);
    const std::size_t at = open_parcel(msg, kind, rank_, a.id, a.signature, continuation);
    write(msg);
    close_parcel(msg, at);
    return message_tag::parcels;
  });
}

void parcelport::post(std::uint32_t dest, const detail::action_info& a,
                      const detail::args_writer& write) {
  if (const std::string why = dead_reason(dest); !why.empty()) {
    spdlog::error("grain: locality#{}: a post of '{}' to {} was dropped", rank_, a.name, why);
    return;
  }
  if (coalescer_ && coalescer_->any() && coalescer_->post(dest, a, write)) return;
  send_one(dest, parcel_kind::post, a, 0, write);
}

void parcelport::call(std::uint32_t dest, const detail::action_info& a,
                      const detail::args_writer& write, detail::response_handler on_response) {
  if (const std::string why = dead_reason(dest); !why.empty()) {
    on_response(false, call_to_dead_rank(a, why));
    return;
  }
  // Waiting before it leaves: the answer may come back before send_one returns.
  const std::uint64_t continuation = wait_for_answer(dest, a, std::move(on_response));
  try {
    if (!(coalescer_ && coalescer_->any() && coalescer_->call(dest, a, continuation, write)))
      send_one(dest, parcel_kind::call, a, continuation, write);
  } catch (...) {
    forget_call(continuation);
    throw;
  }
}

std::uint64_t parcelport::wait_for_answer(std::uint32_t dest, const detail::action_info& a,
                                          detail::response_handler on_response) {
  pending_call c{std::move(on_response), sampled_send_time(), dest, &a};
  std::lock_guard lock(calls_mutex_);
  return calls_.add(std::move(c));
}

void parcelport::forget_call(std::uint64_t continuation) {
  pending_call dropped;  // never called, and destroyed outside the lock
  std::lock_guard lock(calls_mutex_);
  calls_.take(continuation, dropped);
}

std::size_t parcelport::fail_calls_to(std::uint32_t rank, const std::string& why) {
  std::vector<pending_call> failed;
  {
    std::lock_guard lock(calls_mutex_);
    dead_.emplace(rank, why);
    any_dead_.store(true, std::memory_order_release);
    failed = calls_.take_all_to(rank);
  }
  // Outside the lock: a response handler sets a future, whose continuation may call again.
  for (auto& c : failed) c.on_response(false, call_to_dead_rank(*c.action, why));
  return failed.size();
}

bool parcelport::progress() {
  return net_ && net_->progress(deliver_);
}

void parcelport::deliver_answer(std::uint32_t source, const parcel_view& p) {
  pending_call c;
  {
    std::lock_guard lock(calls_mutex_);
    const bool found = (p.continuation & compact::continuation_bit)
                           ? calls_.take_short(static_cast<std::uint32_t>(p.continuation), c)
                           : calls_.take(p.continuation, c);
    if (!found) {
      counts_.errors.fetch_add(1, std::memory_order_relaxed);
      spdlog::error(
          "grain: locality#{}: an answer from rank {} to call {}, which is not waiting, was "
          "dropped",
          rank_, source, p.continuation & ~compact::continuation_bit);
      return;
    }
  }
  counts_.calls_answered.add(1);
  if (c.sent_ns != 0) {
    counts_.latency_ns.add(now_ns() - c.sent_ns);
    counts_.latency_samples.add(1);
  }
  if (p.corrupt) {
    std::string why = "the answer of action '" + c.action->name + "' from locality#" +
                      std::to_string(source) + " fails its checksum (corrupted)";
    c.on_response(false, why);
  } else {
    c.on_response(p.kind == parcel_kind::result, p.payload);
  }
}

void parcelport::run_calls(std::shared_ptr<std::vector<char>> msg,
                           std::vector<queued_call>& calls) {
  // The task keeps the message alive: the payloads are views into it.
  if (calls.size() == 1) {
    const queued_call c = calls.front();
    grain::post(executor{}, annotate(c.action->name.c_str(), [this, msg = std::move(msg), c] {
                  execute(c.parcel, c.action);
                }));
    return;
  }
  // In order; execute() catches what a parcel throws, so the others still run. The task
  // takes the calls' storage; the caller's vector starts afresh, sized for the next message.
  const std::size_t n = calls.size();
  const char* name = calls.front().action->name.c_str();
  grain::post(executor{}, annotate(name, [this, msg = std::move(msg), calls = std::move(calls)] {
                for (const queued_call& c : calls) execute(c.parcel, c.action);
              }));
  calls = {};
  calls.reserve(n);
}

void parcelport::run_direct(const parcel_view& p, const detail::action_info* a) {
  // In the network's progress, on a worker outside any task: a wait would block it.
  detail::no_wait_scope no_wait("a direct action");
  execute(p, a);
}

void parcelport::execute(const parcel_view& p, const detail::action_info* a) {
  // A direct action's result goes into a vector its thread reuses (a direct action never
  // waits, so nothing else runs on this thread before the answer leaves); a task's, which
  // may suspend and resume on another thread, into its own.
  thread_local std::vector<char> reused;
  thread_local bool reused_busy = false;
  const bool reuse = a->direct && !reused_busy;
  std::vector<char> own;
  std::vector<char>& result = reuse ? reused : own;
  if (reuse) {
    reused.clear();
    reused_busy = true;
  }
  struct release {
    bool on;
    ~release() {
      if (on) reused_busy = false;
    }
  } done{reuse};
  try {
    a->invoke(p.payload, result);
  } catch (const parcel_error& e) {
    refuse(p, "action '" + a->name + "': the arguments do not decode: " + e.what());
    return;
  } catch (const std::exception& e) {
    if (p.kind == parcel_kind::call) {
      std::string what =
          "action '" + a->name + "' on locality#" + std::to_string(rank_) + " threw: " + e.what();
      answer(p.source, p.continuation, false, {what.begin(), what.end()});
    } else {
      spdlog::warn("grain: locality#{}: action '{}' posted by rank {} threw: {}", rank_, a->name,
                   p.source, e.what());
    }
    return;
  } catch (...) {
    std::string what = "action '" + a->name + "' on locality#" + std::to_string(rank_) +
                       " threw a non-std exception";
    if (p.kind == parcel_kind::call)
      answer(p.source, p.continuation, false, {what.begin(), what.end()});
    else
      spdlog::warn("grain: {} (posted by rank {})", what, p.source);
    return;
  }
  if (p.kind == parcel_kind::call) answer(p.source, p.continuation, true, result);
}

void parcelport::set_observer(
    std::uint64_t action,
    std::function<void(std::uint32_t, std::uint64_t, const std::vector<std::span<const char>>&)>
        fn) {
  std::lock_guard lock(observer_m_);
  observed_action_ = action;
  observer_ = std::move(fn);
  observed_.store(observer_ != nullptr, std::memory_order_release);
}

void parcelport::answer(std::uint32_t dest, std::uint64_t continuation, bool ok,
                        std::span<const char> payload) {
  // A compact call's answer: compact too when it is a small result (errors carry messages).
  if ((continuation & compact::continuation_bit) && ok && payload.size() <= compact::max_payload) {
    const auto tag = static_cast<message_tag>(
        compact::result_tag(static_cast<std::uint32_t>(continuation & 0xffffu)));
    build_and_send(dest, [&](std::vector<char>& msg) {
      msg.assign(payload.begin(), payload.end());
      return tag;
    });
    return;
  }
  build_and_send(dest, [&](std::vector<char>& msg) {
    single_parcel_message(msg, ok ? parcel_kind::result : parcel_kind::error, rank_, 0, 0,
                          continuation, payload);
    return message_tag::parcels;
  });
}

void parcelport::refuse(const parcel_view& p, const std::string& why) {
  counts_.errors.fetch_add(1, std::memory_order_relaxed);
  spdlog::error("grain: locality#{}: refused a {} parcel from rank {}: {}", rank_,
                to_string(p.kind), p.source, why);
  if (p.kind == parcel_kind::call && p.source < size_) {
    std::string what = "locality#" + std::to_string(rank_) + " refused the call: " + why;
    answer(p.source, p.continuation, false, {what.begin(), what.end()});
  }
}

}  // namespace grain::distributed

namespace grain::distributed {

void parcelport::refuse_broken_message(std::uint32_t source, std::span<const char> msg,
                                       const std::string& why) {
  counts_.errors.fetch_add(1, std::memory_order_relaxed);
  spdlog::error("grain: locality#{}: a message of {} bytes from rank {} was dropped: {}", rank_,
                msg.size(), source, why);
  parcel_view first;
  if (!first_parcel_header(msg, first) || first.kind != parcel_kind::call || first.source != source)
    return;
  std::string what = "locality#" + std::to_string(rank_) + " dropped the message: " + why;
  answer(source, first.continuation, false, {what.begin(), what.end()});
}

}  // namespace grain::distributed
