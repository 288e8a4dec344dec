// The generation table of collectives_engine.hpp: contributions and their slots, the engine
// that is current, the timeout, and grain's collectives API over it. Starting generations in
// order, checking every rank's header, results and timeouts: collectives_delivery.cpp.
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

namespace {

std::atomic<collectives_engine*> current_engine{nullptr};
std::atomic<std::uint64_t> timeout_ns{60'000'000'000ULL};

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
