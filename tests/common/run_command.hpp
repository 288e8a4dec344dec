#pragma once
// Running a shell command from a test: its exit status and its stdout and stderr together.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace grain::test {

struct command_result {
  int status = -1;  // exit status, -1 if it did not exit normally
  std::string output;
};

inline command_result run_command(const std::string& cmd) {
  command_result r;
  std::FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

inline bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

}  // namespace grain::test
