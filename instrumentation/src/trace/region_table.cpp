// Region ids by name (see region_table.hpp).
#include "region_table.hpp"

namespace grain::instrumentation::trace_detail {

region_table::region_table() {
  get("Idle", region_kind::idle);
}

std::uint32_t region_table::get(std::string_view name, region_kind kind) {
  std::lock_guard lk(m_);
  auto it = ids_.find(std::string(name));
  if (it != ids_.end()) return it->second;
  auto id = static_cast<std::uint32_t>(names_.size());
  // The records hold 24-bit region ids (record.hpp); the last one stands for every name after
  // it, which no real program reaches (16 M task kinds).
  if (id >= max_encoded_region) {
    if (id > max_encoded_region) return max_encoded_region;
    name = "<more regions than a trace holds>";
  }
  ids_.emplace(std::string(name), id);
  names_.emplace_back(std::string(name), kind);
  return id;
}

std::vector<std::pair<std::string, region_kind>> region_table::all() const {
  std::lock_guard lk(m_);
  return names_;
}

}  // namespace grain::instrumentation::trace_detail
