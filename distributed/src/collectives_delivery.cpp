// The collectives engine's delivery (collectives_engine.hpp): generations started in order,
// every rank's header checked, results computed and handed out (as tasks or at once), failures
// and timeouts, the progress the network's background work runs, and shutdown.
#include "collectives_engine.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "collectives_wire.hpp"
#include "grain/async.hpp"
#include "grain/clock.hpp"
#include "grain/distributed/action.hpp"
#include "grain/ext/hooks.hpp"

namespace grain::distributed {

using namespace engine_detail;

void collectives_engine::start_ready(channel& ch, std::vector<delivery>& out) {
  for (;;) {
    const bool lone = ch.lone_busy && ch.lone.generation == ch.next_start;
    auto it = lone ? ch.slots.end() : ch.slots.find(ch.next_start);
    if (!lone && it == ch.slots.end()) return;
    slot& s = lone ? ch.lone : it->second;
    if (s.st != state::ready) return;
    // A generation that ends here: its result is copied into the delivery, so the slot goes.
    auto release = [&] {
      if (lone)
        ch.lone_busy = false;
      else
        retire(ch, it);
      add_locked(open_, -1);
    };
    if (s.send.empty()) fill_block(s);
    if (!net_) {
      ++ch.next_start;
      out.push_back(finish(s, s.send, {}));
      release();
      continue;
    }
    const std::size_t block = s.send.size();
    switch (s.kind) {
      case detail::collective_kind::reduce:
        s.recv.assign(s.root == rank_ ? block * size_ : 0, 0);
        break;
      case detail::collective_kind::broadcast:
        s.recv = s.send;
        break;
      default:
        s.recv.resize(block * size_);  // every byte is written by MPI or from send
        break;
    }
    const std::uint64_t id = next_op_;
    try {
      if (!net_->start(id, s.kind, s.root, s.send, s.recv)) {
        retry_start_ = true;  // network busy: the next progress round
        return;
      }
    } catch (const std::exception& e) {
      ++ch.next_start;
      out.push_back(finish(s, {}, e.what()));
      release();
      continue;
    }
    ++next_op_;
    s.st = state::started;
    s.started_ns = lone ? s.last_ns : now_ns();
    started_.push_back({id, s.kind, s.generation, lone});
    add_locked(counts_.in_flight, 1);
    ++ch.next_start;
  }
}

collectives_engine::delivery collectives_engine::finish(slot& s, std::span<char> blocks,
                                                        const std::string& net_error) {
  delivery d;
  d.kind = s.kind;
  d.done = std::move(s.done);
  s.done.clear();
  std::span<const char> result;
  d.error = conclude(s, blocks, net_error, result);
  if (!d.error) d.result.assign(result.begin(), result.end());
  return d;
}

std::exception_ptr collectives_engine::conclude(slot& s, std::span<char> blocks,
                                                const std::string& net_error,
                                                std::span<const char>& result) {
  s.st = state::finished;
  const std::string error = outcome(s, blocks, net_error, result);
  account(s, !error.empty());
  return error.empty() ? nullptr : failure(error);
}

std::string collectives_engine::outcome(slot& s, std::span<char> blocks,
                                        const std::string& net_error,
                                        std::span<const char>& result) {
  if (!net_error.empty()) return where(s) + ": MPI failed: " + net_error;
  const std::size_t block = s.send.size();
  const std::size_t payload = block - sizeof(wire_header);
  const bool on_root = s.root == rank_;
  std::size_t n = 0;
  switch (s.kind) {
    case detail::collective_kind::broadcast:
      n = 1;
      break;
    case detail::collective_kind::reduce:
      n = on_root ? size_ : 0;
      break;
    default:
      n = size_;
      break;
  }
  if (blocks.size() < n * block) return where(s) + ": short result from the network";
  // Every rank's header, in rank order: the first error wins, then mismatches.
  for (std::size_t r = 0; r < n; ++r) {
    wire_header h;
    std::memcpy(&h, blocks.data() + r * block, sizeof h);
    if (h.error) {
      h.message[sizeof(h.message) - 1] = '\0';
      return where(s) + " failed: " + h.message;
    }
    if (h.kind != static_cast<std::uint32_t>(s.kind) || h.type_id != s.type_id || h.size != s.size)
      return where(s) + ": locality#" + std::to_string(h.rank) +
             " contributed a value of another type to it (sizes " + std::to_string(h.size) +
             " and " + std::to_string(s.size) + " bytes)";
    if (h.generation != s.generation)
      return where(s) + ": locality#" + std::to_string(h.rank) + " took part as generation " +
             std::to_string(h.generation) +
             " (the localities number their generations differently)";
    if (s.kind == detail::collective_kind::all_gather && h.count != s.expected)
      return where(s) + ": locality#" + std::to_string(h.rank) + " gathered " +
             std::to_string(h.count) + " contributions, this one " + std::to_string(s.expected) +
             " (all_gather needs the same number everywhere)";
  }
  if (!s.error.empty()) return where(s) + " failed: " + s.error;
  auto payload_of = [&](std::size_t r) { return blocks.data() + r * block + sizeof(wire_header); };
  // The result is made in place in `blocks`, which stay the slot's until it is reused.
  switch (s.kind) {
    case detail::collective_kind::all_reduce:
    case detail::collective_kind::reduce:
      if (n == 0) {
        result = s.local;  // not the root: what this locality sent
        break;
      }
      for (std::size_t r = 1; r < n; ++r) s.combine(payload_of(0), payload_of(r));
      result = {payload_of(0), payload};
      break;
    case detail::collective_kind::broadcast:
      result = {payload_of(0), payload};
      break;
    case detail::collective_kind::all_gather:
      // The payloads side by side, without the headers (each moves down, never over one
      // still to move).
      for (std::size_t r = 0; r < n; ++r)
        std::memmove(blocks.data() + r * payload, payload_of(r), payload);
      result = {blocks.data(), n * payload};
      break;
    case detail::collective_kind::barrier:
      result = {};
      break;
  }
  return {};
}

void collectives_engine::hand_out_lone(lone_delivery& d) {
  slot& s = d.ch->lone;
  done_fn fn = std::move(s.done.front());
  s.done.clear();
  fn(d.result, d.error);
  // The slot's buffers (the result) may be used again.
  d.ch->lone_handing.store(false, std::memory_order_release);
}

collectives_engine::delivery collectives_engine::abandon(slot& s, const std::string& why,
                                                         bool count) {
  delivery d;
  d.kind = s.kind;
  d.done = std::move(s.done);
  s.done.clear();
  d.error = failure(why);
  if (count) account(s, true);
  s.delivered = true;
  return d;
}

void collectives_engine::account(const slot& s, bool failed) {
  const std::uint64_t t = now_ns();
  add_locked(counts_.operations, 1);
  add_locked(counts_.latency_ns, t - s.first_ns);
  add_locked(counts_.local_wait_ns, s.last_ns - s.first_ns);
  if (failed) add_locked(counts_.errors, 1);
}

void collectives_engine::deliver(std::vector<delivery>& out) {
  for (delivery& d : out)
    for (auto& fn : d.done) fn(d.result, d.error);
  out.clear();
}

bool collectives_engine::deliveries_as_tasks() noexcept {
  // Nobody watches task phases (no trace): the results are handed out in the progress round.
  // Setting a promise never runs user code on this thread (continuations are spawned, waiting
  // user threads made ready), and a task less is a third of an 8-byte all_reduce's latency
  // (docs/collectives.md, "Latency").
  return std::atomic_ref<decltype(runtime_hooks::phase_begin)>(hooks().phase_begin)
             .load(std::memory_order_relaxed) != nullptr;
}

void collectives_engine::deliver_as_tasks(std::vector<delivery>& out) {
  if (out.empty()) return;
  if (!deliveries_as_tasks()) return deliver(out);
  static const char* const names[detail::collective_kind_count] = {
      "collective:all_reduce", "collective:reduce", "collective:broadcast", "collective:all_gather",
      "collective:barrier"};
  for (delivery& d : out) {
    const char* name = names[static_cast<std::size_t>(d.kind)];
    grain::post(executor{}, annotate(name, [d = std::move(d)]() mutable {
                  for (auto& fn : d.done) fn(d.result, d.error);
                }));
  }
  out.clear();
}

void collectives_engine::fail_all(const std::string& why) {
  std::vector<delivery> out;
  {
    std::lock_guard lock(m_);
    dead_ = why;
    for (channel& ch : channels_) {
      for (auto& [g, s] : ch.slots)
        if (!s.delivered && !s.done.empty())
          out.push_back(abandon(s, where(s) + " cannot complete: " + why, true));
      if (ch.lone_busy && !ch.lone.delivered)
        out.push_back(abandon(ch.lone, where(ch.lone) + " cannot complete: " + why, true));
    }
  }
  deliver_as_tasks(out);
}

bool collectives_engine::progress() {
  if (open_.load(std::memory_order_relaxed) == 0) return false;
  std::vector<delivery> out;
  std::array<lone_delivery, detail::collective_kind_count> lones;
  std::size_t n_lones = 0;
  bool moved = false;
  {
    std::unique_lock lock(m_, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    // Timeouts are milliseconds or more: the clock is read every few rounds and the slots are
    // looked at once a millisecond, and generations are started here only when a start found
    // the network busy (every other full slot started in contribute), so that the rounds of an
    // idle worker waiting for a result cost one test of the network (docs/collectives.md,
    // "Latency").
    bool scan = false;
    std::uint64_t now = 0;
    if (++rounds_ >= scan_clock_rounds) {
      rounds_ = 0;
      now = now_ns();
      scan = now - last_scan_ns_ >= scan_period_ns;
      if (scan) last_scan_ns_ = now;
    }
    const std::uint64_t limit = scan ? collective_timeout_ns() : 0;
    const bool restart = std::exchange(retry_start_, false);
    auto overdue = [&](slot& s) {
      // Twice the limit: a locality that is short of contributions reports that first. Not
      // completing: a locality that never joined this generation. The contributors learn it;
      // the network operation stays (it completes if the locality comes).
      if ((s.st == state::started || s.st == state::ready) && !s.delivered &&
          now - (s.st == state::started ? s.started_ns : s.last_ns) > 2 * limit) {
        out.push_back(abandon(s,
                              where(s) + " did not complete within " + ms_text(2 * limit) +
                                  ": does every locality contribute to it?",
                              true));
        moved = true;
      }
    };
    for (channel& ch : (scan || restart) ? std::span(channels_) : std::span<channel>()) {
      if (scan) {
        for (auto& [g, s] : ch.slots) {
          if (s.st == state::collecting && now - s.first_ns > limit) {
            // Contributions missing here: start anyway, with the error, so that every locality
            // learns it instead of waiting in MPI.
            s.error = "locality#" + std::to_string(rank_) + " had " + std::to_string(s.arrived) +
                      " of " + std::to_string(s.expected) + " local contributions after " +
                      ms_text(limit);
            s.st = state::ready;
            ch.auto_next = std::max(ch.auto_next, g + 1);
            moved = true;
          } else {
            overdue(s);
          }
        }
        if (ch.lone_busy) overdue(ch.lone);
      }
      start_ready(ch, out);
    }
    if (net_ && !started_.empty()) {
      finished_.clear();
      if (net_->poll(finished_)) {
        const bool as_tasks = deliveries_as_tasks();
        for (auto& f : finished_) {
          auto at = std::find_if(started_.begin(), started_.end(),
                                 [&](const started_op& o) { return o.id == f.id; });
          if (at == started_.end()) continue;
          channel& ch = channels_[static_cast<std::size_t>(at->kind)];
          const started_op op = *at;
          *at = started_.back();
          started_.pop_back();
          add_locked(counts_.in_flight, -1);
          moved = true;
          if (op.lone) {
            slot& s = ch.lone;
            ch.lone_busy = false;
            add_locked(open_, -1);
            if (s.delivered) continue;
            if (as_tasks) {
              out.push_back(finish(s, s.recv, f.error));
              continue;
            }
            // Handed out from the slot's buffers after the lock (no copy, no allocation).
            lone_delivery& d = lones[n_lones++];
            d.ch = &ch;
            d.error = conclude(s, s.recv, f.error, d.result);
            ch.lone_handing.store(true, std::memory_order_relaxed);
            continue;
          }
          auto it = ch.slots.find(op.generation);
          if (it == ch.slots.end()) continue;
          slot& s = it->second;
          if (!s.delivered) out.push_back(finish(s, s.recv, f.error));
          retire(ch, it);
          add_locked(open_, -1);
        }
      }
    }
  }
  for (std::size_t i = 0; i < n_lones; ++i) hand_out_lone(lones[i]);
  moved = moved || !out.empty();
  deliver_as_tasks(out);
  return moved;
}

void collectives_engine::shutdown() {
  std::vector<delivery> out;
  {
    std::lock_guard lock(m_);
    for (channel& ch : channels_) {
      for (auto& [g, s] : ch.slots)
        if (!s.delivered && !s.done.empty())
          out.push_back(abandon(s, where(s) + ": the runtime stopped before it completed", false));
      if (ch.lone_busy && !ch.lone.delivered)
        out.push_back(
            abandon(ch.lone, where(ch.lone) + ": the runtime stopped before it completed", false));
    }
  }
  deliver(out);
}

}  // namespace grain::distributed
