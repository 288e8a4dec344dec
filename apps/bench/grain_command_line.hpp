#pragma once
// The command line of the grain benchmark programs (bench-grain, bench-grain-group,
// bench-apps-grain): --threads=P means --grain:threads=P; the program's own arguments are
// parsed before the runtime starts (a bad one exits before any worker thread exists); the
// workers are woken before anything is timed.
#include <string>
#include <string_view>
#include <vector>

#include "grain/grain.hpp"

namespace bench {

class grain_command_line {
 public:
  grain_command_line(int argc, char** argv) : args_(argv, argv + argc), argc_(argc) {
    for (auto& a : args_)
      if (a.rfind("--threads=", 0) == 0) a = "--grain:threads=" + a.substr(10);
    all_.reserve(args_.size() + 1);
    for (auto& a : args_) all_.push_back(a.data());
    all_.push_back(nullptr);
    for (char* a : all_)
      if (!a || std::string_view(a).rfind("--grain:", 0) != 0) own_.push_back(a);
  }
  // The program's own arguments, for its parser (argv[0] first, nullptr last).
  int own_argc() const { return static_cast<int>(own_.size()) - 1; }
  char** own_argv() { return own_.data(); }
  // Everything, for grain::runtime (which consumes the --grain:* arguments).
  int& argc() { return argc_; }
  char** argv() { return all_.data(); }

 private:
  std::vector<std::string> args_;
  std::vector<char*> all_, own_;
  int argc_;
};

inline void wake_workers() {
  std::vector<grain::future<int>> warm;
  warm.reserve(64);
  for (int i = 0; i < 64; ++i) warm.push_back(grain::async([] { return 0; }));
  for (auto& w : warm) w.get();
}

}  // namespace bench
