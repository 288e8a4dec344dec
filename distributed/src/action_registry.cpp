// The process's table of actions (action.hpp): id -> entry, filled at start-up by every
// grain::action<&fn> the program names.
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "grain/distributed/action.hpp"

namespace grain::detail {

namespace {

struct registry {
  std::mutex mutex;
  std::deque<action_info> entries;  // stable addresses
  std::unordered_map<std::uint64_t, const action_info*> by_id;
  // freeze_wire_indices: written once, then read without the lock.
  std::vector<const action_info*> by_wire_index;
  std::atomic<bool> frozen{false};
  std::uint64_t fingerprint = 0;
};

// Actions numbered at most. A compact parcel's tag names fewer (2^12 for calls, 2^28 for posts:
// compact_parcel.hpp); the others travel in the full format, named by their ids.
constexpr std::size_t max_wire_indices = std::size_t{1} << 20;

registry& table() {
  static registry r;  // first use may come from another translation unit's static init
  return r;
}

}  // namespace

std::uint64_t hash_bytes(std::string_view s) noexcept {
  return XXH3_64bits(s.data(), s.size());
}

const action_info& register_action(action_info info) {
  registry& r = table();
  std::lock_guard lock(r.mutex);
  if (auto it = r.by_id.find(info.id); it != r.by_id.end()) {
    if (it->second->name == info.name) {
      if (it->second->direct == info.direct) return *it->second;
      std::fprintf(stderr,
                   "grain: '%s' is named both as grain::action and as grain::direct_action; "
                   "a receiving locality must know one way to run it\n",
                   info.name.c_str());
      std::abort();
    }
    std::fprintf(stderr, "grain: actions '%s' and '%s' have the same id %llx; rename one\n",
                 it->second->name.c_str(), info.name.c_str(),
                 static_cast<unsigned long long>(info.id));
    std::abort();
  }
  r.entries.push_back(std::move(info));
  r.by_id.emplace(r.entries.back().id, &r.entries.back());
  return r.entries.back();
}

const action_info* find_action(std::uint64_t id) noexcept {
  // Every received parcel looks its action up, mostly the same one as the last: a one-entry
  // cache per thread spares the lock and the hash (entries never move or go away).
  thread_local std::uint64_t last_id = 0;
  thread_local const action_info* last = nullptr;
  if (last && last_id == id) return last;
  registry& r = table();
  std::lock_guard lock(r.mutex);
  auto it = r.by_id.find(id);
  if (it == r.by_id.end()) return nullptr;
  last_id = id;
  last = it->second;
  return last;
}

std::uint64_t freeze_wire_indices() {
  registry& r = table();
  std::lock_guard lock(r.mutex);
  if (r.frozen.load(std::memory_order_relaxed)) return r.fingerprint;
  std::vector<action_info*> sorted;
  for (action_info& a : r.entries) sorted.push_back(&a);
  std::sort(sorted.begin(), sorted.end(),
            [](const action_info* x, const action_info* y) { return x->id < y->id; });
  std::vector<std::uint64_t> described;
  for (std::size_t i = 0; i < sorted.size() && i < max_wire_indices; ++i) {
    sorted[i]->wire_index = static_cast<std::uint32_t>(i);
    r.by_wire_index.push_back(sorted[i]);
    described.insert(described.end(),
                     {sorted[i]->id, sorted[i]->signature, sorted[i]->direct ? 1u : 0u});
  }
  r.fingerprint = XXH3_64bits(described.data(), described.size() * sizeof(std::uint64_t));
  r.frozen.store(true, std::memory_order_release);
  return r.fingerprint;
}

const action_info* find_action_by_wire_index(std::uint32_t index) noexcept {
  registry& r = table();
  if (!r.frozen.load(std::memory_order_acquire) || index >= r.by_wire_index.size()) return nullptr;
  return r.by_wire_index[index];
}

const action_info* find_action(std::string_view name) noexcept {
  registry& r = table();
  std::lock_guard lock(r.mutex);
  const action_info* found = nullptr;
  int short_matches = 0;
  for (const action_info& a : r.entries) {
    if (a.name == name) return &a;
    const std::size_t at = a.name.rfind("::");
    if (at != std::string::npos && std::string_view(a.name).substr(at + 2) == name) {
      found = &a;
      ++short_matches;
    }
  }
  return short_matches == 1 ? found : nullptr;
}

}  // namespace grain::detail
