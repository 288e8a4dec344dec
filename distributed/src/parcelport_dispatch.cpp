// Received messages to parcels (parcelport.hpp): a message is checked whole, its parcels are
// sorted into answers, direct calls and calls that run as tasks (a message's calls in one task,
// in order), and whatever does not hold up is refused. What each kind then does:
// parcelport.cpp.
#include "parcelport.hpp"

#include <spdlog/spdlog.h>

#include <atomic>

#include "compact_parcel.hpp"
#include "grain/async.hpp"
#include "grain/clock.hpp"
#include "grain/detail/waiter.hpp"

namespace grain::distributed {

void parcelport::on_message(std::uint32_t source, message_tag tag, std::span<const char> bytes,
                            std::vector<char>* owner) {
  if (compact::is_compact(static_cast<int>(tag))) {
    counts_.messages_received.add(1);
    counts_.bytes_received.add(bytes.size());
    on_compact(source, static_cast<int>(tag), bytes, owner);
    return;
  }
  if (tag == message_tag::control) {
    control_message m;
    if (bytes.size() != sizeof m) {
      spdlog::error(
          "grain: locality#{}: a control message of {} bytes from rank {} (expected "
          "{}) was dropped",
          rank_, bytes.size(), source, sizeof m);
      return;
    }
    std::memcpy(&m, bytes.data(), sizeof m);
    m.source = source;
    {
      std::lock_guard lock(control_mutex_);
      control_.push_back(m);
    }
    control_cv_.notify_all();
    return;
  }
  counts_.messages_received.add(1);
  counts_.bytes_received.add(bytes.size());
  on_parcels(source, bytes, owner);
}

std::shared_ptr<std::vector<char>> parcelport::keep_message(std::span<const char> msg,
                                                            std::vector<char>* owner) {
  return owner ? std::make_shared<std::vector<char>>(std::move(*owner))
               : std::make_shared<std::vector<char>>(msg.begin(), msg.end());
}

bool parcelport::on_sound_batch(std::uint32_t source, std::span<const char> msg,
                                std::vector<char>* owner) {
  batch_view b;
  try {
    if (!read_batch(msg, b)) return false;
  } catch (const parcel_error&) {
    return false;  // on_parcels says what is wrong with it
  }
  if (b.source != source || b.corrupt || observed_.load(std::memory_order_acquire)) return false;
  const detail::action_info* a = detail::find_action(b.action);
  if (!a || a->signature != b.signature) return false;
  counts_.parcels_received.add(b.parcels);
  parcel_view p = b.shared();  // from `source`, not corrupt: checked above
  if (a->direct) {
    batch_cursor c(msg.subspan(b.body_at));
    while (c.next(p.kind, p.continuation, p.payload)) run_direct(p, a);
    return true;
  }
  auto kept = keep_message(msg, owner);  // the task keeps it alive
  // In order; execute() catches what a parcel throws, so the others still run.
  grain::post(executor{}, annotate(a->name.c_str(),
                                   [this, kept = std::move(kept), a, p, at = b.body_at]() mutable {
                                     batch_cursor c(std::span<const char>(*kept).subspan(at));
                                     while (c.next(p.kind, p.continuation, p.payload))
                                       execute(p, a);
                                   }));
  return true;
}

void parcelport::on_parcels(std::uint32_t source, std::span<const char> msg,
                            std::vector<char>* owner) {
  if (on_sound_batch(source, msg, owner)) return;
  // The views go into this thread's vector, reused: no allocation per message (the transport
  // hands messages over on one thread at a time, never nested).
  thread_local std::vector<parcel_view> parcels;
  try {
    decode_message(msg, parcels);
  } catch (const parcel_error& e) {
    counts_.errors.fetch_add(1, std::memory_order_relaxed);
    refuse_broken_message(source, msg, e.what());
    return;
  }
  // A call that becomes a task keeps the message alive (its payload is a view into it): the
  // first one takes the transport's vector, or copies a ring slot's bytes, once per message.
  std::shared_ptr<std::vector<char>> kept;
  const auto keep = [&](parcel_view p) {
    if (!kept) kept = keep_message(msg, owner);
    // A moved vector keeps its buffer; a copy has its own: the view follows the bytes.
    p.payload =
        std::span<const char>(kept->data() + (p.payload.data() - msg.data()), p.payload.size());
    return p;
  };
  if (observed_.load(std::memory_order_acquire)) {
    std::lock_guard lock(observer_m_);
    std::vector<std::span<const char>> payloads;
    for (const parcel_view& p : parcels)
      if (p.action == observed_action_ &&
          (p.kind == parcel_kind::call || p.kind == parcel_kind::post))
        payloads.push_back(p.payload);
    if (observer_ && !payloads.empty()) observer_(source, observed_action_, payloads);
  }
  counts_.parcels_received.add(parcels.size());
  // The calls and posts to run as tasks, in the message's order: one task runs them all (a
  // coalesced message carries hundreds of one action's parcels; a task each would cost more
  // than most of them do).
  thread_local std::vector<queued_call> to_run;
  to_run.clear();
  for (const parcel_view& p : parcels) {
    if (p.source != source) {
      refuse(p, "it says it comes from rank " + std::to_string(p.source) + " but came from rank " +
                    std::to_string(source));
      continue;
    }
    switch (p.kind) {
      case parcel_kind::call:
      case parcel_kind::post: {
        const detail::action_info* a = detail::find_action(p.action);
        if (!a) {
          refuse(p, "this locality has no action with id " + std::to_string(p.action) +
                        " (a different program on each rank?)");
        } else if (a->signature != p.signature) {
          refuse(p, "action '" + a->name +
                        "': the caller's argument or result types differ from this "
                        "locality's (a different build on each rank?)");
        } else if (p.corrupt) {
          refuse(p, "action '" + a->name + "': the payload fails its checksum (corrupted)");
        } else if (a->direct) {
          run_direct(p, a);
        } else {
          to_run.push_back({keep(p), a});
        }
        break;
      }
      case parcel_kind::result:
      case parcel_kind::error:
        deliver_answer(source, p);
        break;
    }
  }
  if (!to_run.empty()) run_calls(std::move(kept), to_run);
}

}  // namespace grain::distributed
