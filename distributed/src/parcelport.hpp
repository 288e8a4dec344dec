#pragma once
// The parcel port: turns action calls into parcels and received parcels into tasks, answers
// calls, matches answers to the callers' futures, counts what it moves (the /parcels
// counters) and runs the end of the program across ranks (termination.cpp). One per process
// while a runtime runs; without a transport (no mpirun) the program is one locality and only
// local calls exist.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "call_table.hpp"
#include "coalescer.hpp"
#include "grain/detail/waiter.hpp"
#include "grain/distributed/remote_async.hpp"
#include "parcel.hpp"
#include "sharded_counts.hpp"
#include "transport.hpp"

namespace grain {
class runtime_core;
}

namespace grain::distributed {

struct parcel_counts {
  // Sent: added to by any thread.
  void count_sent(std::uint64_t parcels, std::uint64_t bytes, std::uint64_t messages = 1) {
    sent_.add({parcels, messages, bytes});
  }
  std::uint64_t parcels_sent() const noexcept { return sent_.load(0); }
  std::uint64_t messages_sent() const noexcept { return sent_.load(1); }
  std::uint64_t bytes_sent() const noexcept { return sent_.load(2); }
  // Received: added to by the thread handing messages over (one at a time, with acquire and
  // release between them), so a single writer's count is enough.
  stat_counter parcels_received, bytes_received, messages_received;
  stat_counter calls_answered;
  // Round trips of the calls timed (one in 16 of each thread's: parcelport.cpp).
  stat_counter latency_ns, latency_samples;
  // Parcels refused (unknown action, bad payload, ...): also by tasks.
  std::atomic<std::uint64_t> errors{0};

 private:
  sharded_counts<3> sent_;  // parcels, messages, bytes
};

// A control message of the termination protocol (termination.cpp).
struct control_message {
  std::uint32_t type = 0;  // control_type
  std::uint32_t wave = 0;
  std::uint64_t sent = 0, received = 0;
  std::uint32_t source = 0;
};
enum control_type : std::uint32_t { count_request = 1, count_reply = 2, shutdown = 3 };

class parcelport {
 public:
  explicit parcelport(std::unique_ptr<transport> t);
  ~parcelport();
  parcelport(const parcelport&) = delete;
  parcelport& operator=(const parcelport&) = delete;

  static parcelport* current() noexcept;
  // Becomes the process's parcel port unless another one is; false then.
  bool make_current_if_none() noexcept;
  void make_current(bool on) noexcept;

  std::uint32_t rank() const noexcept { return rank_; }
  std::uint32_t size() const noexcept { return size_; }
  bool distributed() const noexcept { return net_ != nullptr && size_ > 1; }
  const transport* network() const noexcept { return net_.get(); }
  transport* network() noexcept { return net_.get(); }

  // `tamper`, when given, changes the encoded message before it is sent (testing.hpp: the
  // fault tests send what a broken or different program would).
  void send_action(std::uint32_t dest, const detail::action_info& a, std::vector<char> args,
                   detail::response_handler on_response,
                   const std::function<void(std::vector<char>&)>& tamper = {});
  // A post or a call of `a`, its arguments serialised by `write` straight into the message
  // being built for `dest`: the coalesced queue's (coalescer::post/call, docs/coalescing.md
  // "The per-parcel path") or a message of its own. An exception of `write` sends nothing
  // and leaves no call waiting.
  void post(std::uint32_t dest, const detail::action_info& a, const detail::args_writer& write);
  void call(std::uint32_t dest, const detail::action_info& a, const detail::args_writer& write,
            detail::response_handler on_response);
  // Background work: moves messages, dispatches what arrived. True when anything moved.
  bool progress();

  // The end of the program (termination.cpp). Rank 0, after main's work is done: waits until
  // no parcel is in flight anywhere, then tells every rank to stop. The others: serve until
  // told so.
  void quiesce_root(runtime_core& rt);
  void serve_until_shutdown(runtime_core& rt);
  // Completes sends and shuts the network down (every rank).
  void finalize();
  // The runtime's start failed here (transport::abandon): no MPI_Finalize.
  void abandon() noexcept;

  // Rank `rank` died (peer_watch.hpp): every call waiting on it gets `why` as its error, and
  // so does every later call to it; posts to it are dropped. Returns the calls failed now.
  std::size_t fail_calls_to(std::uint32_t rank, const std::string& why);

  const parcel_counts& counts() const noexcept { return counts_; }
  // testing.hpp's message observer (one action at a time).
  void set_observer(
      std::uint64_t action,
      std::function<void(std::uint32_t, std::uint64_t, const std::vector<std::span<const char>>&)>
          fn);
  // Compact parcels (compact_parcel.hpp): whether this rank sends them. They are on when every
  // rank has the same action table and the network carries 31-bit tags;
  // --grain:compact-parcels=off turns them off (set before any parcel moves). A rank reads
  // compact parcels whatever its own setting.
  bool compact_parcels() const noexcept { return compact_; }
  // The fault tests' seams (testing.hpp): a compact call with its tag and payload changed on
  // the way out (throws std::logic_error when the call has no compact tag), and a message
  // with any tag.
  void send_compact_tampered(std::uint32_t dest, const detail::action_info& a,
                             std::vector<char> args, detail::response_handler on_response,
                             const std::function<void(int& tag, std::vector<char>&)>& tamper);
  void send_raw(std::uint32_t dest, int tag, std::vector<char> bytes);
  void set_compact_parcels(bool on) noexcept { compact_ = on && compact_possible_; }
  // Parcel coalescing (coalescer.hpp); nullptr when the program is one locality.
  coalescer* coalescing() noexcept { return coalescer_.get(); }
  const coalescer* coalescing() const noexcept { return coalescer_.get(); }

 private:
  // `owner`: see transport::receiver.
  void on_message(std::uint32_t source, message_tag tag, std::span<const char> bytes,
                  std::vector<char>* owner);
  void on_parcels(std::uint32_t source, std::span<const char> msg, std::vector<char>* owner);
  // A compact parcel (parcelport_compact.cpp): its tag says what the full format's headers say.
  void on_compact(std::uint32_t source, int tag, std::span<const char> payload,
                  std::vector<char>* owner);
  // The compact tag of a call or post of `a` under `continuation`; 0 when it has none (the
  // action or the call's slot is past what a tag names, or compact parcels are off).
  int compact_tag(parcel_kind kind, const detail::action_info& a,
                  std::uint64_t continuation) const noexcept;
  // Registers a call that waits for its answer (timed for the latency on one call in 16);
  // returns its continuation. forget_call takes it out again when it could not be sent.
  std::uint64_t wait_for_answer(std::uint32_t dest, const detail::action_info& a,
                                detail::response_handler on_response);
  void forget_call(std::uint64_t continuation);
  // A result or error from `source` for the call waiting under p.continuation (a call
  // table's continuation, or a compact call's short reference with compact::continuation_bit).
  void deliver_answer(std::uint32_t source, const parcel_view& p);
  // A received message kept past its hand-over (a task runs its parcels later): the
  // transport's vector when it gave one (moved: views into it stay valid), else a copy.
  static std::shared_ptr<std::vector<char>> keep_message(std::span<const char> msg,
                                                         std::vector<char>* owner);
  // A sound batch of one known action (a coalesced message): checked once, its parcels run
  // straight from its bytes, as one task or, for a direct action, here. False (nothing done)
  // for anything else, which on_parcels decodes parcel by parcel and refuses as it must.
  bool on_sound_batch(std::uint32_t source, std::span<const char> msg, std::vector<char>* owner);
  struct queued_call {
    parcel_view parcel;
    const detail::action_info* action = nullptr;
  };
  // A message's calls and posts of task actions as one task (it keeps the message alive); a
  // direct action's run at once instead (run_direct).
  void run_calls(std::shared_ptr<std::vector<char>> msg, std::vector<queued_call>& calls);
  void run_direct(const parcel_view& p, const detail::action_info* a);
  // Runs the action and answers the call (result, or the error it threw).
  void execute(const parcel_view& p, const detail::action_info* a);
  void answer(std::uint32_t dest, std::uint64_t continuation, bool ok,
              std::span<const char> payload);
  void refuse(const parcel_view& p, const std::string& why);
  void send_parcel(std::uint32_t dest, const parcel& p,
                   const std::function<void(std::vector<char>&)>& tamper = {});
  // A message that did not decode: answer the call in its first parcel if that much is
  // readable, so that its caller gets an error instead of waiting for ever.
  void refuse_broken_message(std::uint32_t source, std::span<const char> msg,
                             const std::string& why);
  void send_control(std::uint32_t dest, control_message m);
  // Sends the coalesced parcels still queued (before a rank reports its message counts).
  void flush_coalesced();
  // Waits for the next control message, progressing the network meanwhile.
  control_message next_control();

  // The error of a call or post to a rank known dead; empty when `dest` is alive. Inline: a
  // flag test on every post while no rank is dead.
  std::string dead_reason(std::uint32_t dest) {
    if (!any_dead_.load(std::memory_order_acquire)) [[likely]]
      return {};
    return dead_reason_of(dest);
  }
  std::string dead_reason_of(std::uint32_t dest);
  // Builds a message with build(vector&), which returns its tag — in this thread's reused
  // vector when it is free — and sends it (send_built).
  template <class Build>
  void build_and_send(std::uint32_t dest, const Build& build);
  // Counts and sends a built message: at once when it is small and the network free
  // (transport::try_send_now), else queued; `scratch`: msg is the thread's reused vector.
  void send_built(std::uint32_t dest, std::vector<char>& msg, bool scratch,
                  message_tag tag = message_tag::parcels);
  // A message of one parcel whose payload `write` appends.
  void send_one(std::uint32_t dest, parcel_kind kind, const detail::action_info& a,
                std::uint64_t continuation, const detail::args_writer& write);

  std::unique_ptr<transport> net_;
  std::uint32_t rank_ = 0, size_ = 1;
  parcel_counts counts_;
  detail::spinlock calls_mutex_;
  call_table calls_;                                     // under calls_mutex_
  std::unordered_map<std::uint32_t, std::string> dead_;  // under calls_mutex_: rank -> why
  std::atomic<bool> any_dead_{false};
  std::mutex control_mutex_;
  std::condition_variable control_cv_;
  std::deque<control_message> control_;
  transport::receiver deliver_;
  std::mutex observer_m_;
  std::atomic<bool> observed_{false};
  std::uint64_t observed_action_ = 0;
  std::function<void(std::uint32_t, std::uint64_t, const std::vector<std::span<const char>>&)>
      observer_;
  bool compact_possible_ = false;  // same action tables everywhere, 31-bit tags
  bool compact_ = false;
  std::unique_ptr<coalescer> coalescer_;  // after net_: goes first, it sends through net_
};

}  // namespace grain::distributed
