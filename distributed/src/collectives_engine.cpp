// The generation table of collectives_engine.hpp: contributions, the start in generation
// order, the checks of every rank's header, results, timeouts.
#include "collectives_engine.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "grain/async.hpp"
#include "grain/clock.hpp"
#include "grain/distributed/action.hpp"
#include "grain/ext/hooks.hpp"

namespace grain::distributed {

namespace {

std::atomic<collectives_engine*> current_engine{nullptr};
std::atomic<std::uint64_t> timeout_ns{60'000'000'000ULL};

// Every rank's block starts with this; the payload follows.
struct wire_header {
  std::uint64_t type_id = 0;
  std::uint64_t generation = 0;
  std::uint32_t kind = 0, size = 0, count = 0, rank = 0, error = 0, reserved = 0;
  char message[88] = {};
};
static_assert(sizeof(wire_header) == 128);

std::string ms_text(std::uint64_t ns) {
  return std::to_string(ns / 1'000'000) + " ms";
}

// The engine's counts change only under its lock, and the counters and progress only read
// them: a load and a store, not a locked read-modify-write (five per generation).
template <class T, class D>
void add_locked(std::atomic<T>& a, D d) noexcept {
  a.store(a.load(std::memory_order_relaxed) + static_cast<T>(d), std::memory_order_relaxed);
}

std::exception_ptr failure(const std::string& what) {
  return std::make_exception_ptr(collective_error(what));
}

}  // namespace

std::uint64_t collective_timeout_ns() noexcept {
  return timeout_ns.load(std::memory_order_relaxed);
}

collectives_engine::collectives_engine(std::uint32_t rank, std::uint32_t size,
                                       std::unique_ptr<collective_network> net)
    : rank_(rank), size_(net ? size : 1), net_(std::move(net)) {}

collectives_engine::~collectives_engine() {
  make_current(false);
}

collectives_engine* collectives_engine::current() noexcept {
  return current_engine.load(std::memory_order_acquire);
}

void collectives_engine::make_current(bool on) noexcept {
  if (on) {
    current_engine.store(this, std::memory_order_release);
  } else {
    collectives_engine* self = this;
    current_engine.compare_exchange_strong(self, nullptr);
  }
}

std::string collectives_engine::where(const slot& s) const {
  return std::string("grain::") + detail::collective_name(s.kind) + " generation " +
         std::to_string(s.generation) + " on locality#" + std::to_string(rank_);
}

std::uint64_t collectives_engine::next_generation(detail::collective_kind k) {
  std::lock_guard lock(m_);
  channel& ch = channels_[static_cast<std::size_t>(k)];
  std::uint64_t g = std::max(ch.auto_next, ch.next_start);
  for (std::uint64_t s : ch.site_next) g = std::max(g, s);
  for (auto it = ch.slots.find(g); it != ch.slots.end() && it->second.st != state::collecting;
       it = ch.slots.find(g))
    ++g;
  return g;
}

void collectives_engine::contribute(detail::collective_contribution&& c) {
  const char* name = detail::collective_name(c.kind);
  auto refuse = [&](const std::string& why) { c.done({}, failure(why)); };
  if (c.args.local_contributors == 0)
    return refuse(std::string("grain::") + name + ": local_contributors must be at least 1");
  if (c.args.this_site >= 0 &&
      static_cast<std::uint32_t>(c.args.this_site) >= c.args.local_contributors)
    return refuse(std::string("grain::") + name + ": this_site " +
                  std::to_string(c.args.this_site) + " is not below local_contributors " +
                  std::to_string(c.args.local_contributors));
  if ((c.kind == detail::collective_kind::reduce || c.kind == detail::collective_kind::broadcast) &&
      c.root >= size_)
    return refuse(
        std::string("grain::") + name + ": root locality#" + std::to_string(c.root) +
        " does not exist (there " +
        (size_ == 1 ? "is 1 locality)" : "are " + std::to_string(size_) + " localities)"));
  // Under the lock; a refusal is reported after it is released (a contributor's promise may
  // run a continuation that contributes again).
  std::vector<delivery> out;
  auto admit = [&]() -> std::string {
    channel& ch = channels_[static_cast<std::size_t>(c.kind)];
    if (try_lone(ch, c, out)) return {};
    std::uint64_t g = 0;
    const auto site = static_cast<std::size_t>(c.args.this_site);
    if (c.args.generation < 0 && c.args.this_site >= 0) {
      // Every generation needs every site, so none before next_start still waits for it.
      if (ch.site_next.size() <= site) ch.site_next.resize(site + 1, 0);
      g = std::max(ch.site_next[site], ch.next_start);
      ch.site_next[site] = g + 1;
    } else if (c.args.generation < 0) {
      g = std::max(ch.auto_next, ch.next_start);
      for (auto it = ch.slots.find(g); it != ch.slots.end() && it->second.st != state::collecting;
           it = ch.slots.find(g))
        ++g;
      ch.auto_next = g;
    } else {
      g = static_cast<std::uint64_t>(c.args.generation);
    }
    auto it = ch.slots.find(g);
    if (it == ch.slots.end()) {
      if (g < ch.next_start)
        return std::string(
            std::string("grain::") + name + " generation " + std::to_string(g) + " on locality#" +
            std::to_string(rank_) +
            " is closed: it already had all its contributions (a generation used twice?)");
      it = new_slot(ch, g);
      slot& s = it->second;
      s.kind = c.kind;
      s.generation = g;
      s.root = c.root;
      s.size = c.size;
      s.expected = c.args.local_contributors;
      s.type_id = c.type_id;
      s.first_ns = now_ns();
      add_locked(open_, 1);
    }
    slot& s = it->second;
    if (s.st != state::collecting)
      return std::string(where(s) + " already had all its " + std::to_string(s.expected) +
                         " local contribution(s): one more arrived (a wrong local_contributors, or "
                         "a generation used twice)");
    if (s.expected != c.args.local_contributors || s.root != c.root || s.type_id != c.type_id)
      return std::string(
          where(s) + ": this contribution says " + std::to_string(c.args.local_contributors) +
          " local contributor(s), root " + std::to_string(c.root) +
          ", while the generation's first said " + std::to_string(s.expected) + ", root " +
          std::to_string(s.root) + (s.type_id != c.type_id ? ", and the value types differ" : ""));
    if (c.args.this_site >= 0) {
      if (s.sites.empty()) s.sites.assign(s.expected, false);
      if (s.sites[site])
        return std::string(where(s) + ": contributor " + std::to_string(site) +
                           " contributed to it twice");
      s.sites[site] = true;
    }
    add(s, c);
    if (s.arrived == s.expected) {
      s.st = state::ready;
      if (c.args.generation < 0) ch.auto_next = g + 1;
      start_ready(ch, out);
    }
    return {};
  };
  std::string refusal;
  {
    std::lock_guard lock(m_);
    refusal = dead_.empty() ? admit() : std::string("grain::") + name + ": " + dead_;
  }
  if (!refusal.empty()) refuse(refusal);
  deliver_as_tasks(out);
}

bool collectives_engine::try_lone(channel& ch, detail::collective_contribution& c,
                                  std::vector<delivery>& out) {
  // The generation it joins must be the next to start (none of the kind open or waiting).
  if (!net_ || c.args.local_contributors != 1 || c.args.generation >= 0 || c.args.this_site >= 0 ||
      c.error || !ch.slots.empty() || ch.auto_next > ch.next_start || ch.lone_busy ||
      ch.lone_handing.load(std::memory_order_acquire))
    return false;
  const std::uint64_t g = ch.next_start;
  slot& s = ch.lone;
  renew(s);
  s.kind = c.kind;
  s.generation = g;
  s.root = c.root;
  s.size = c.size;
  s.type_id = c.type_id;
  add(s, c);
  s.first_ns = s.last_ns;
  s.st = state::ready;
  fill_block(s);  // into the last generation's buffer (start_ready fills only empty ones)
  ch.lone_busy = true;
  ch.auto_next = g + 1;
  add_locked(open_, 1);
  start_ready(ch, out);
  return true;
}

// A finished generation's map node goes to the channel's spares with its buffers' capacity:
// the next generation of the kind reuses both (no allocation per generation in a loop).
std::map<std::uint64_t, collectives_engine::slot>::iterator collectives_engine::new_slot(
    channel& ch, std::uint64_t g) {
  if (ch.spares.empty()) return ch.slots.emplace(g, slot{}).first;
  auto node = std::move(ch.spares.back());
  ch.spares.pop_back();
  node.key() = g;
  return ch.slots.insert(std::move(node)).position;
}

void collectives_engine::retire(channel& ch, std::map<std::uint64_t, slot>::iterator it) {
  auto node = ch.slots.extract(it);
  if (ch.spares.size() >= max_spares) return;
  slot& s = node.mapped();
  renew(s);
  s.send.clear();  // start_ready fills a slot whose block is empty
  s.recv.clear();
  ch.spares.push_back(std::move(node));
}

void collectives_engine::renew(slot& s) {
  // A new slot's fields; the vectors keep their capacity (no allocation per generation), and
  // the blocks their bytes (fill_block writes over them).
  std::vector<char> local = std::move(s.local), send = std::move(s.send), recv = std::move(s.recv);
  std::vector<done_fn> done = std::move(s.done);
  local.clear();
  done.clear();
  s = slot{};
  s.local = std::move(local);
  s.send = std::move(send);
  s.recv = std::move(recv);
  s.done = std::move(done);
}

void collectives_engine::add(slot& s, detail::collective_contribution& c) {
  ++s.arrived;
  s.last_ns = now_ns();
  s.done.push_back(std::move(c.done));  // c is spent: nothing refuses it after add
  if (c.error) {
    std::string what = "a contributor failed";
    try {
      std::rethrow_exception(c.error);
    } catch (const std::exception& e) {
      what += std::string(": ") + e.what();
    } catch (...) {
    }
    if (s.error.empty()) s.error = "locality#" + std::to_string(rank_) + ": " + what;
    return;
  }
  const char* v = static_cast<const char*>(c.value);
  switch (s.kind) {
    case detail::collective_kind::all_reduce:
    case detail::collective_kind::reduce:
      if (!s.has_value) {
        s.local.assign(v, v + s.size);
        s.combine = std::move(c.combine);
        s.has_value = true;
      } else {
        s.combine(s.local.data(), v);
      }
      break;
    case detail::collective_kind::broadcast:
      if (!s.has_value && s.root == rank_) {
        s.local.assign(v, v + s.size);
        s.has_value = true;
      }
      break;
    case detail::collective_kind::all_gather:
      s.local.insert(s.local.end(), v, v + s.size);
      break;
    case detail::collective_kind::barrier:
      break;
  }
}

void collectives_engine::fill_block(slot& s) const {
  std::size_t payload = s.size;
  if (s.kind == detail::collective_kind::all_gather) payload = std::size_t{s.size} * s.expected;
  if (s.kind == detail::collective_kind::barrier) payload = 0;
  std::vector<char>& b = s.send;
  // A reused buffer of the right size keeps its bytes: every field before the message is
  // written, and the message is read only where `error` is set, which writes it whole.
  if (b.size() != sizeof(wire_header) + payload) b.assign(sizeof(wire_header) + payload, 0);
  wire_header h;
  h.type_id = s.type_id;
  h.generation = s.generation;
  h.kind = static_cast<std::uint32_t>(s.kind);
  h.size = s.size;
  h.count = s.expected;
  h.rank = rank_;
  h.error = s.error.empty() ? 0 : 1;
  std::memcpy(b.data(), &h, offsetof(wire_header, message));
  if (h.error)  // strncpy fills the rest of the field with zeros
    std::strncpy(b.data() + offsetof(wire_header, message), s.error.c_str(), sizeof(h.message) - 1);
  // A barrier, or a generation that only failed, has no local value (and data() may be null).
  if (!s.local.empty())
    std::memcpy(b.data() + sizeof h, s.local.data(), std::min(payload, s.local.size()));
}

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

namespace grain {

namespace detail {

const char* collective_name(collective_kind k) noexcept {
  switch (k) {
    case collective_kind::all_reduce:
      return "all_reduce";
    case collective_kind::reduce:
      return "reduce";
    case collective_kind::broadcast:
      return "broadcast";
    case collective_kind::all_gather:
      return "all_gather";
    case collective_kind::barrier:
      return "barrier";
  }
  return "collective";
}

std::uint64_t collective_type_hash(std::string_view type_name, std::size_t size) noexcept {
  return hash_bytes(std::string(type_name) + "#" + std::to_string(size));
}

void contribute(collective_contribution&& c) {
  distributed::collectives_engine* e = distributed::collectives_engine::current();
  if (!e) {
    c.done({}, std::make_exception_ptr(
                   collective_error(std::string("grain::") + collective_name(c.kind) +
                                    ": collectives need a running grain::runtime")));
    return;
  }
  e->contribute(std::move(c));
}

}  // namespace detail

namespace collectives {

std::uint64_t next_generation(detail::collective_kind kind) {
  distributed::collectives_engine* e = distributed::collectives_engine::current();
  return e ? e->next_generation(kind) : 0;
}

void set_timeout_ms(std::uint64_t ms) {
  distributed::timeout_ns.store(ms * 1'000'000ULL, std::memory_order_relaxed);
}

std::uint64_t timeout_ms() {
  return distributed::collective_timeout_ns() / 1'000'000ULL;
}

}  // namespace collectives

}  // namespace grain
