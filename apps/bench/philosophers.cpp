// bench-philosophers: dining philosophers whose "eating" and "thinking" wait for the wall
// clock, as ported std::thread code does (issue 19, item 5c). Tasks are not time-sliced: a
// grain task that spins on the clock keeps its worker, so a philosopher who could eat waits
// for a worker held by one who only thinks. grain::this_thread::sleep_for suspends the task
// instead and gives the worker back. The modes compare the four combinations:
//   threads-spin   std::thread + std::mutex, spinning on the clock (OS threads are preempted)
//   threads-sleep  std::thread + std::mutex, std::this_thread::sleep_for
//   grain-spin     grain tasks + grain::mutex, spinning on the clock
//   grain-sleep    grain tasks + grain::mutex, grain::this_thread::sleep_for
//   bench-philosophers --mode=MODE [--philosophers=5] [--meals=20] [--eat-us=1000]
//                      [--think-us=1000] [--grain:threads=P]
// Prints one JSON line; "meals" must equal philosophers x meals.
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/app_args.hpp"
#include "grain/grain.hpp"

namespace {

using clk = std::chrono::steady_clock;
namespace args = bench::args;

struct options {
  std::string mode = "grain-sleep";
  int philosophers = 5, meals = 20;
  long eat_us = 1000, think_us = 1000;
};

void spin_for(std::chrono::microseconds d) {
  const auto end = clk::now() + d;
  while (clk::now() < end) {
  }
}

// One philosopher's life; Mutex is std::mutex or grain::mutex, Wait how time passes.
template <class Mutex, class Wait>
void dine(int p, const options& o, std::vector<Mutex>& forks, std::atomic<long>& eaten, Wait wait) {
  const int n = o.philosophers;
  for (int m = 0; m < o.meals; ++m) {
    wait(std::chrono::microseconds(o.think_us));
    std::scoped_lock both(forks[static_cast<std::size_t>(p)],
                          forks[static_cast<std::size_t>((p + 1) % n)]);
    wait(std::chrono::microseconds(o.eat_us));
    eaten.fetch_add(1, std::memory_order_relaxed);
  }
}

template <class Wait>
long with_threads(const options& o, Wait wait) {
  std::vector<std::mutex> forks(static_cast<std::size_t>(o.philosophers));
  std::atomic<long> eaten{0};
  std::vector<std::thread> t;
  t.reserve(static_cast<std::size_t>(o.philosophers));
  for (int p = 0; p < o.philosophers; ++p)
    t.emplace_back([&, p] { dine(p, o, forks, eaten, wait); });
  for (auto& x : t) x.join();
  return eaten.load();
}

template <class Wait>
long with_tasks(const options& o, Wait wait) {
  std::vector<grain::mutex> forks(static_cast<std::size_t>(o.philosophers));
  std::atomic<long> eaten{0};
  std::vector<grain::future<void>> t;
  t.reserve(static_cast<std::size_t>(o.philosophers));
  for (int p = 0; p < o.philosophers; ++p)
    t.push_back(grain::async(grain::launch::async, [&, p] { dine(p, o, forks, eaten, wait); }));
  for (auto& x : t) x.get();
  return eaten.load();
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const auto a = args::split(argv[i]);
    if (a.key == "--mode" && (a.value == "threads-spin" || a.value == "threads-sleep" ||
                              a.value == "grain-spin" || a.value == "grain-sleep"))
      o.mode = a.value;
    else if (a.key == "--philosophers")
      o.philosophers = static_cast<int>(args::integer(a, 2, 1000));
    else if (a.key == "--meals")
      o.meals = static_cast<int>(args::integer(a, 1, 1000000));
    else if (a.key == "--eat-us")
      o.eat_us = args::integer(a, 0, 10000000);
    else if (a.key == "--think-us")
      o.think_us = args::integer(a, 0, 10000000);
    else
      throw args::bad_argument{a.arg};
  }
  return o;
}

}  // namespace

// The program; main() turns an error it cannot go on from into a message and a status.
static int run_main(int argc, char** argv) {
  grain::runtime rt(argc, argv);
  options o;
  try {
    o = parse(argc, argv);
  } catch (const args::bad_argument& e) {
    std::fprintf(stderr,
                 "bench-philosophers: bad argument '%s'\n"
                 "usage: bench-philosophers --mode=threads-spin|threads-sleep|grain-spin|"
                 "grain-sleep [--philosophers=5] [--meals=20] [--eat-us=1000] "
                 "[--think-us=1000] [--grain:...]\n",
                 e.arg.c_str());
    return 2;
  }
  auto spin = [](std::chrono::microseconds d) { spin_for(d); };
  const auto t0 = clk::now();
  long eaten = 0;
  if (o.mode == "threads-spin")
    eaten = with_threads(o, spin);
  else if (o.mode == "threads-sleep")
    eaten = with_threads(o, [](std::chrono::microseconds d) { std::this_thread::sleep_for(d); });
  else if (o.mode == "grain-spin")
    eaten = with_tasks(o, spin);
  else
    eaten = with_tasks(o, [](std::chrono::microseconds d) { grain::this_thread::sleep_for(d); });
  const double s = std::chrono::duration<double>(clk::now() - t0).count();
  std::printf(
      "{\"system\":\"%s\",\"bench\":\"philosophers\",\"threads\":%u,\"time_s\":%.6f,"
      "\"meals\":%ld,\"philosophers\":%d,\"eat_us\":%ld,\"think_us\":%ld}\n",
      o.mode.c_str(), rt.num_workers(), s, eaten, o.philosophers, o.eat_us, o.think_us);
  return eaten == static_cast<long>(o.philosophers) * o.meals ? 0 : 1;
}

int main(int argc, char** argv) {
  try {
    return run_main(argc, argv);
  } catch (const std::exception& e) {
    return grain::fatal_error("bench-philosophers", e);
  }
}
