// Compact parcels in and out of the parcel port (compact_parcel.hpp, parcelport.hpp).
#include <spdlog/spdlog.h>

#include <stdexcept>
#include <string>

#include "compact_parcel.hpp"
#include "grain/async.hpp"
#include "parcelport.hpp"

namespace grain::distributed {

int parcelport::compact_tag(parcel_kind kind, const detail::action_info& a,
                            std::uint64_t continuation) const noexcept {
  if (!compact_) return 0;
  if (kind == parcel_kind::post)
    return a.wire_index < compact::post_actions ? compact::post_tag(a.wire_index) : 0;
  std::uint32_t ref = 0;
  if (kind != parcel_kind::call || a.wire_index >= compact::call_actions ||
      !call_table::short_ref(continuation, ref))
    return 0;
  return compact::call_tag(a.wire_index, ref);
}

void parcelport::on_compact(std::uint32_t source, int tag, std::span<const char> payload,
                            std::vector<char>* owner) {
  compact::decoded d;
  if (!compact::decode(tag, d)) {
    counts_.errors.fetch_add(1, std::memory_order_relaxed);
    spdlog::error(
        "grain: locality#{}: a message of {} bytes from rank {} with tag {:#x} was dropped: no "
        "compact parcel has that tag",
        rank_, payload.size(), source, tag);
    return;
  }
  counts_.parcels_received.add(1);
  parcel_view p;
  p.kind = d.kind;
  p.source = source;
  p.payload = payload;
  if (d.kind != parcel_kind::post) p.continuation = compact::continuation_bit | d.short_ref;
  if (payload.size() > compact::max_payload) {
    if (d.kind == parcel_kind::result) {
      // Its caller learns of it: an error instead of a result that no sender would write.
      p.kind = parcel_kind::error;
      const std::string why = "locality#" + std::to_string(rank_) +
                              " dropped a compact answer of " + std::to_string(payload.size()) +
                              " bytes from locality#" + std::to_string(source) + " (at most " +
                              std::to_string(compact::max_payload) + ")";
      p.payload = why;
      counts_.errors.fetch_add(1, std::memory_order_relaxed);
      spdlog::error("grain: {}", why);
      deliver_answer(source, p);
    } else {
      refuse(p, "a compact parcel of " + std::to_string(payload.size()) + " bytes (at most " +
                    std::to_string(compact::max_payload) + ")");
    }
    return;
  }
  if (d.kind == parcel_kind::result) {
    deliver_answer(source, p);
    return;
  }
  const detail::action_info* a = detail::find_action_by_wire_index(d.action_index);
  if (!a) {
    refuse(p, "this locality has no action numbered " + std::to_string(d.action_index) +
                  " (a compact parcel; a different program on each rank?)");
    return;
  }
  p.action = a->id;
  p.signature = a->signature;
  if (observed_.load(std::memory_order_acquire)) {
    std::lock_guard lock(observer_m_);
    if (observer_ && a->id == observed_action_) observer_(source, a->id, {payload});
  }
  if (a->direct) {
    run_direct(p, a);
    return;
  }
  auto kept = keep_message(payload, owner);  // the task keeps the payload alive
  p.payload = std::span<const char>(*kept);
  grain::post(executor{},
              annotate(a->name.c_str(), [this, kept = std::move(kept), p, a] { execute(p, a); }));
}

void parcelport::send_compact_tampered(
    std::uint32_t dest, const detail::action_info& a, std::vector<char> args,
    detail::response_handler on_response,
    const std::function<void(int& tag, std::vector<char>&)>& tamper) {
  const std::uint64_t continuation = wait_for_answer(dest, a, std::move(on_response));
  int tag = compact_tag(parcel_kind::call, a, continuation);
  if (tag == 0) {
    forget_call(continuation);
    throw std::logic_error("grain: a call of '" + a.name + "' has no compact tag here");
  }
  tamper(tag, args);
  send_raw(dest, tag, std::move(args));
}

void parcelport::send_raw(std::uint32_t dest, int tag, std::vector<char> bytes) {
  send_built(dest, bytes, false, static_cast<message_tag>(tag));
}

}  // namespace grain::distributed
