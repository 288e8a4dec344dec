// grain-fib: naive Fibonacci with one task per call (the classic task-overhead benchmark),
// then a report of what the runtime did.
//   grain-fib [N] [--policy=async|fork|sync|adaptive] [--repeat=R] --grain:threads=2
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "grain/grain.hpp"

namespace {

grain::launch policy = grain::launch::async;

long fib(int n) {
  if (n < 2) return n;
  grain::future<long> a = grain::async(policy, fib, n - 1);
  long b = fib(n - 2);
  return a.get() + b;
}

long fib_serial(int n) {
  return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2);
}

grain::launch parse_policy(const std::string& p) {
  if (p == "async") return grain::launch::async;
  if (p == "fork") return grain::launch::fork;
  if (p == "sync") return grain::launch::sync;
  if (p == "adaptive") return grain::launch::adaptive;
  std::fprintf(stderr, "grain-fib: unknown --policy=%s (async, fork, sync, adaptive)\n", p.c_str());
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  grain::runtime rt(argc, argv);
  int n = 30;
  int repeat = 1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--policy=", 0) == 0) {
      policy = parse_policy(a.substr(9));
    } else if (a.rfind("--repeat=", 0) == 0) {
      repeat = std::atoi(a.c_str() + 9);
    } else if (!a.empty() && a[0] != '-') {
      n = std::atoi(a.c_str());
    } else {
      std::fprintf(
          stderr,
          "usage: grain-fib [N] [--policy=async|fork|sync|adaptive] [--repeat=R] [--grain:...]\n");
      return 2;
    }
  }
  for (int r = 0; r < repeat; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    long v = grain::async([n] { return fib(n); }).get();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (v != fib_serial(n)) {
      std::fprintf(stderr, "grain-fib: wrong result %ld\n", v);
      return 1;
    }
    std::uint64_t tasks = 0, inlined = 0, stolen = 0, stacks = 0;
    for (unsigned w = 0; w < rt.num_workers(); ++w) {
      auto& st = rt.core().stats(w);
      tasks += st.tasks.get();
      inlined += st.inline_tasks.get();
      stolen += st.stolen_to.get();
      stacks += st.stacks_allocated.get();
    }
    std::printf(
        "fib(%d) = %ld in %.3f s on %u workers: %llu tasks (%llu run inline by their waiting "
        "parent, %llu stolen), %llu stacks\n",
        n, v, s, rt.num_workers(), static_cast<unsigned long long>(tasks),
        static_cast<unsigned long long>(inlined), static_cast<unsigned long long>(stolen),
        static_cast<unsigned long long>(stacks));
  }
  return 0;
}
