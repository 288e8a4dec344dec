// The policy module directories and the one path resolution they are checked with.
#include "module_dirs.hpp"

#include <stdlib.h>

#include <algorithm>
#include <cstdlib>

namespace grain::policy {

std::string real_path(const std::string& path) {
  char* r = ::realpath(path.c_str(), nullptr);
  if (!r) return {};
  std::string s(r);
  std::free(r);
  return s;
}

void module_dirs::add(const std::string& dir) {
  std::string r = real_path(dir);
  if (!r.empty() && std::find(dirs_.begin(), dirs_.end(), r) == dirs_.end())
    dirs_.push_back(std::move(r));
}

bool module_dirs::contains(const std::string& resolved) const {
  for (auto& d : dirs_)
    if (resolved.size() > d.size() && resolved.compare(0, d.size(), d) == 0 &&
        resolved[d.size()] == '/')
      return true;
  return false;
}

std::string module_dirs::text() const {
  std::string s;
  for (auto& d : dirs_) s += (s.empty() ? "" : ", ") + d;
  return s.empty() ? "(none)" : s;
}

}  // namespace grain::policy
