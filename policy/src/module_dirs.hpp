#pragma once
// The directories policies may read Lua files from (require, dofile, loadfile), kept
// resolved. Separate because the engine fills the list (options, a policy file's own folder)
// while the sandbox checks every path against it: both must resolve paths the same way.
#include <string>
#include <vector>

namespace grain::policy {

// The path with every symlink and ".." resolved; empty when it does not exist.
std::string real_path(const std::string& path);

class module_dirs {
 public:
  // Resolves `dir` and adds it once; a directory that does not exist is left out.
  void add(const std::string& dir);
  // Whether a resolved path lies below one of the directories.
  bool contains(const std::string& resolved) const;
  const std::vector<std::string>& all() const { return dirs_; }
  // "dir1, dir2" for error messages, "(none)" when empty.
  std::string text() const;

 private:
  std::vector<std::string> dirs_;
};

}  // namespace grain::policy
