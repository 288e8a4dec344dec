#pragma once
// A fresh directory per test process under the system's temporary directory, and a file's
// whole content.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace grain::test {

// TMP/grain-PREFIX-TAG-PID, emptied.
inline std::filesystem::path fresh_dir(const std::string& prefix, const std::string& tag) {
  const std::filesystem::path d =
      std::filesystem::temp_directory_path() /
      ("grain-" + prefix + "-" + tag + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace grain::test
