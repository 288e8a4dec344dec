#pragma once
// Helpers for the trace tests: temporary directories, running tools, trace checks.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/run_command.hpp"
#include "grain/async.hpp"
#include "grain/instrumentation/trace_reader.hpp"
#include "grain/runtime.hpp"

namespace grain::test {

namespace fs = std::filesystem;

// A file's whole contents ("" when it cannot be read).
inline std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The traced workload of these tests: every call with n >= 2 spawns one task, so fib(n)
// spawns fib(n + 1) - 1 of them.
inline long fib(int n) {
  if (n < 2) return n;
  grain::future<long> a = grain::async(fib, n - 1);
  long b = fib(n - 2);
  return a.get() + b;
}

// The task phases the runtime counted (every worker's /threads/count/cumulative-phases).
inline std::uint64_t total_phases(grain::runtime& rt) {
  std::uint64_t n = 0;
  for (unsigned w = 0; w < rt.num_workers(); ++w) n += rt.core().stats(w).phases.get();
  return n;
}

// A fresh path (not created) under the temporary directory, removed at the end.
class temp_path {
 public:
  explicit temp_path(const std::string& tag) {
    static int n = 0;
    path_ = fs::temp_directory_path() /
            ("grain-trace-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  ~temp_path() {
    if (!std::getenv("GRAIN_KEEP_TRACES")) {
      std::error_code ec;
      fs::remove_all(path_, ec);
    }
  }
  std::string str() const { return path_.string(); }
  fs::path operator/(const std::string& s) const { return path_ / s; }

 private:
  fs::path path_;
};

inline bool have_command(const std::string& name) {
  return run_command("command -v " + name + " >/dev/null").status == 0;
}

inline bool have_python_otf2() {
  return run_command("/usr/bin/python3 -c 'import otf2'").status == 0;
}

inline void expect_otf2_print_accepts(const std::string& anchor) {
  if (!have_command("otf2-print")) GTEST_SKIP() << "otf2-print not on PATH";
  auto r = run_command("otf2-print --silent -Werror '" + anchor + "'");
  EXPECT_EQ(r.status, 0) << r.output;
}

// Facts every grain trace satisfies; returns the task GUIDs.
struct trace_facts {
  std::uint64_t task_enters = 0;  // Enter of task regions, re-entries of inline parents excluded
  std::uint64_t reentries = 0;
  std::uint64_t task_leaves = 0;
  std::uint64_t idle_enters = 0;
  std::set<std::uint64_t> guids;
};

inline trace_facts check_trace(const instrumentation::otf2_trace& t) {
  trace_facts f;
  std::vector<std::uint64_t> parents;
  for (auto& [id, loc] : t.locations) {
    std::uint64_t last = 0;
    std::vector<std::uint32_t> stack;
    for (auto& e : loc.events) {
      EXPECT_GE(e.time, last) << "timestamps decrease on location " << loc.name;
      EXPECT_GE(e.time, t.global_offset) << "event before the global offset on " << loc.name;
      EXPECT_LE(e.time, t.global_offset + t.trace_length) << "event after the end on " << loc.name;
      last = e.time;
      if (e.type == instrumentation::otf2_event::kind::enter) {
        stack.push_back(e.ref);
        const auto& reg = t.regions.at(e.ref);
        if (reg.name.rfind("task:", 0) == 0) {
          EXPECT_EQ(reg.role, "TASK");
          EXPECT_EQ(reg.paradigm, "USER");
          auto* g = e.attribute("GUID");
          auto* p = e.attribute("Parent GUID");
          EXPECT_TRUE(g && g->as_uint()) << "task Enter without GUID on " << loc.name;
          EXPECT_TRUE(p && p->as_uint()) << "task Enter without Parent GUID on " << loc.name;
          if (g && g->as_uint()) f.guids.insert(*g->as_uint());
          if (p && p->as_uint()) parents.push_back(*p->as_uint());
          if (e.attribute("Resumed inline child"))
            ++f.reentries;
          else
            ++f.task_enters;
        } else if (reg.name == "Idle") {
          ++f.idle_enters;
        }
      } else if (e.type == instrumentation::otf2_event::kind::leave) {
        EXPECT_FALSE(stack.empty()) << "Leave without Enter on " << loc.name;
        if (!stack.empty()) {
          EXPECT_EQ(stack.back(), e.ref) << "Leave of another region than the open one";
          stack.pop_back();
        }
        if (t.regions.at(e.ref).name.rfind("task:", 0) == 0) ++f.task_leaves;
      }
    }
    EXPECT_TRUE(stack.empty()) << stack.size() << " regions left open on " << loc.name;
    // numberOfEvents also counts records the reader skips (BufferFlush).
    EXPECT_GE(loc.declared_events, loc.events.size()) << "numberOfEvents of " << loc.name;
  }
  for (auto p : parents) EXPECT_TRUE(p == 0 || f.guids.count(p)) << "unknown parent GUID " << p;
  return f;
}

}  // namespace grain::test
