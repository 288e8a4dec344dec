// Counter lookup by full or short name in the snapshot being processed.
#include "counter_view.hpp"

#include "grain/instrumentation/counters.hpp"

namespace grain::policy {

const instrumentation::counter_value* counter_view::find(std::string_view name) {
  // Rebuilt when the snapshot's layout changed.
  if (index_generation_ != cur_.layout_generation || index_size_ != cur_.values.size()) {
    index_.clear();
    // Short names (no {instance}) stand for this locality's total.
    const std::string total = "{" + std::string(instrumentation::default_instance()) + "}";
    for (std::size_t i = 0; i < cur_.values.size(); ++i) {
      const std::string& n = cur_.values[i].name;
      index_.emplace(n, i);
      auto p = n.find(total);
      if (p != std::string::npos) index_.emplace(n.substr(0, p) + n.substr(p + total.size()), i);
    }
    index_generation_ = cur_.layout_generation;
    index_size_ = cur_.values.size();
  }
  auto it = index_.find(std::string(name));
  if (it == index_.end() || it->second >= cur_.values.size()) return nullptr;
  return &cur_.values[it->second];
}

}  // namespace grain::policy
