#pragma once
// Region names and their ids, shared by all workers and the policy location: ids are handed out
// on the task path (once per task kind and worker, behind the recorder's cache), names are read
// once by the back ends' definition writers.
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "record.hpp"

namespace grain::instrumentation::trace_detail {

class region_table {
 public:
  region_table();
  std::uint32_t get(std::string_view name, region_kind kind);
  // Snapshot for the definition writers.
  std::vector<std::pair<std::string, region_kind>> all() const;

 private:
  mutable std::mutex m_;
  std::unordered_map<std::string, std::uint32_t> ids_;
  std::vector<std::pair<std::string, region_kind>> names_;
};

}  // namespace grain::instrumentation::trace_detail
