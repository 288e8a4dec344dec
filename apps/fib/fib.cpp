// grain-fib: naive Fibonacci with one task per call (the classic task-overhead benchmark),
// then a report of what the runtime did.
//   grain-fib [N] [--policy=async|fork|sync|adaptive] [--repeat=R] --grain:threads=2
// Without --policy the calls use grain::async's default policy, which --grain:inline=adaptive
// makes launch::adaptive (docs/inlining.md); --grain:knob=inline.lambda=X sets its lambda.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/app_main.hpp"
#include "grain/detail/task_overhead.hpp"
#include "grain/grain.hpp"

namespace {

grain::launch policy = grain::launch::async;
bool default_policy = true;  // no --policy: grain::async(f) (the --grain:inline default)

long fib(int n);
// Named, so launch::adaptive keys its estimates by "fib" rather than by the type long(*)(int),
// which every function of that signature shares.
const auto fib_task = grain::annotate("fib", fib);

long fib(int n) {
  if (n < 2) return n;
  grain::future<long> a =
      default_policy ? grain::async(fib_task, n - 1) : grain::async(policy, fib_task, n - 1);
  long b = fib(n - 2);
  return a.get() + b;
}

long fib_serial(int n) {
  return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2);
}

}  // namespace

// The program; main() turns an error it cannot go on from into a message and a status.
static int run_main(int argc, char** argv) {
  grain::runtime rt(argc, argv);
  int n = 30;
  int repeat = 1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--policy=", 0) == 0) {
      const auto named = grain::launch_from_name(a.substr(9));
      if (!named || *named == grain::launch::deferred) {
        std::fprintf(stderr, "grain-fib: unknown --policy=%s (async, fork, sync, adaptive)\n",
                     a.c_str() + 9);
        return 2;
      }
      policy = *named;
      default_policy = false;
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
  if (default_policy) policy = grain::detail::default_policy();
  const grain::knob& lambda_knob = grain::knobs().at("inline.lambda");
  std::uint64_t tasks0 = 0, inlined0 = 0, stolen0 = 0;
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
        "fib(%d) = %ld in %.4f s on %u workers: %llu tasks (%llu run inline, %llu stolen), "
        "%llu stacks; policy %s, inline.lambda %g, t_o %.1f ns\n",
        n, v, s, rt.num_workers(), static_cast<unsigned long long>(tasks - tasks0),
        static_cast<unsigned long long>(inlined - inlined0),
        static_cast<unsigned long long>(stolen - stolen0), static_cast<unsigned long long>(stacks),
        grain::launch_name(policy), lambda_knob.value(), grain::detail::task_overhead_ns());
    tasks0 = tasks;
    inlined0 = inlined;
    stolen0 = stolen;
  }
  return 0;
}

// --help (bench::app_main).
constexpr char usage_text[] =
    "usage: grain-fib [N] [--policy=async|fork|sync|adaptive] [--repeat=R] [--grain:...]\n"
    "Naive Fibonacci with one task per call, then what the runtime did.\n"
    "  N                  the argument of fib (default 30)\n"
    "  --policy=P         how each call is launched: async, fork, sync or adaptive (default:\n"
    "                     grain::async's default, which --grain:inline=adaptive makes adaptive)\n"
    "  --repeat=R         runs of fib(N), each timed (default 1)\n";

int main(int argc, char** argv) {
  return bench::app_main(argc, argv, "grain-fib", usage_text, run_main);
}
