// Suspended tasks' inline parents (see chain_store.hpp).
#include "chain_store.hpp"

namespace grain::instrumentation::trace_detail {

void chain_store::save(std::uint64_t guid, const frame* first, std::size_t n) {
  std::lock_guard lk(m_);
  auto [it, inserted] = map_.try_emplace(guid);
  it->second.assign(first, first + n);
  if (inserted) {
    auto& f = filter_[slot(guid)];
    f.store(f.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    saved_.store(saved_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
}

bool chain_store::take(std::uint64_t guid, std::vector<frame>& out) {
  std::lock_guard lk(m_);
  auto it = map_.find(guid);
  if (it == map_.end()) return false;
  out = std::move(it->second);
  map_.erase(it);
  auto& f = filter_[slot(guid)];
  f.store(f.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  saved_.store(saved_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  return true;
}

}  // namespace grain::instrumentation::trace_detail
