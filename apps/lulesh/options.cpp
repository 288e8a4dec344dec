#include "options.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string_view>

namespace lulesh {

const char* variant_name(variant v) {
  switch (v) {
    case variant::grain:
      return "grain";
    case variant::omp:
      return "omp";
    case variant::serial:
      return "serial";
  }
  return "?";
}

const char* schedule_name(omp_schedule s) {
  switch (s) {
    case omp_schedule::static_schedule:
      return "static";
    case omp_schedule::dynamic_schedule:
      return "dynamic";
    case omp_schedule::guided_schedule:
      return "guided";
  }
  return "?";
}

std::string usage() {
  return "usage: grain-lulesh [-s N] [-i N] [-r N] [-b N] [-c N] [-p] [-q] [-h]\n"
         "                    [--variant=grain|omp|serial] [--schedule=static|dynamic|guided]\n"
         "                    [--threads=N] [--partition=N] [--inject=DIST [--inject-a=X]\n"
         "                    [--inject-b=X] [--inject-unit-us=X] [--inject-fraction=X]\n"
         "                    [--inject-seed=N] [--iters-per-us=X]] [--grain:...]\n"
         " -s <size>       elements per edge of each domain's cube (default 30)\n"
         " -i <iterations> at most this many cycles (default: until the stop time)\n"
         " -r <regions>    number of regions (default 11)\n"
         " -b <balance>    region weights (region r is picked with weight r^b, default 1)\n"
         " -c <cost>       extra EOS cost of the expensive regions (default 1)\n"
         " -p              print each cycle's time and time step\n"
         " -q              quiet: print nothing\n"
         " --variant       grain: a dataflow of partition tasks (default); omp: OpenMP parallel\n"
         "                 loops over the partitions; serial: one thread\n"
         " --schedule      the omp variant's loop schedule (default static)\n"
         " --threads=N     the omp variant's threads (default: OpenMP's)\n"
         " --domains-per-locality=K  K domains of -s N on each locality (a cube in all):\n"
         "                 more, smaller pieces of work per worker (grain variant)\n"
         " --priority=critical|pool|none  the material and clock tasks (the time step's\n"
         "                 critical path) at high priority, in the pool \"critical\"\n"
         "                 (--grain:pools=critical:N), or all alike (default none)\n"
         " --partition=N   elements per partition; the knob lulesh.partition starts here\n"
         "                 (default: the domain in 16 partitions per worker, at least 64)\n"
         " --inject=DIST   spin injected load in the six heaviest loops, per partition:\n"
         "                 uniform|scaled|gaussian|poisson|exponential (Wickramasinghe et al. 2017 "
         "section V);\n"
         "                 --inject-a/-b the distribution's parameters in units of\n"
         "                 --inject-unit-us (default 2 us), --inject-fraction of partitions\n";
}

namespace {

long parse_int(std::string_view option, const char* text, long low, long high) {
  if (text == nullptr) throw bad_option{"Missing integer argument to " + std::string(option)};
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || errno != 0)
    throw bad_option{std::string(option) + " needs an integer, got '" + text + "'"};
  if (v < low || v > high)
    throw bad_option{std::string(option) + " must be in [" + std::to_string(low) + ", " +
                     std::to_string(high) + "], got " + text};
  return v;
}

double parse_real(std::string_view option, std::string_view text) {
  const std::string s(text);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v))
    throw bad_option{std::string(option) + " needs a number, got '" + s + "'"};
  return v;
}

}  // namespace

options parse_options(int argc, char** argv) {
  options o;
  o.load.unit_us = 2;
  constexpr long int_max = std::numeric_limits<index_t>::max();
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    const char* next = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a.rfind("--grain:", 0) == 0) continue;
    if (a == "-s") {
      // The element count, 8 corner slots per element, must fit the index type.
      o.prob.size = static_cast<index_t>(parse_int("-s", next, 1, 600));
      ++i;
    } else if (a == "-i") {
      o.iterations = static_cast<index_t>(parse_int("-i", next, 0, int_max));
      ++i;
    } else if (a == "-r") {
      o.prob.regions = static_cast<index_t>(parse_int("-r", next, 1, 100000));
      ++i;
    } else if (a == "-b") {
      o.prob.balance = static_cast<index_t>(parse_int("-b", next, 0, 30));
      ++i;
    } else if (a == "-c") {
      o.prob.cost = static_cast<index_t>(parse_int("-c", next, 0, 1000));
      ++i;
    } else if (a == "-p") {
      o.progress = true;
    } else if (a == "-q") {
      o.quiet = true;
    } else if (a == "-h" || a == "--help") {
      o.help = true;
    } else if (a == "-f" || a == "-v") {
      throw bad_option{std::string(a) + ": grain-lulesh writes no VisIt files"};
    } else {
      const auto eq = a.find('=');
      if (a.rfind("--", 0) != 0 || eq == std::string_view::npos)
        throw bad_option{"ERROR: Unknown command line argument: " + std::string(a)};
      const std::string_view key = a.substr(0, eq), value = a.substr(eq + 1);
      const std::string v(value);
      if (key == "--variant") {
        if (value == "grain")
          o.var = variant::grain;
        else if (value == "omp")
          o.var = variant::omp;
        else if (value == "serial")
          o.var = variant::serial;
        else
          throw bad_option{"--variant must be grain, omp or serial, got '" + v + "'"};
      } else if (key == "--schedule") {
        if (value == "static")
          o.schedule = omp_schedule::static_schedule;
        else if (value == "dynamic")
          o.schedule = omp_schedule::dynamic_schedule;
        else if (value == "guided")
          o.schedule = omp_schedule::guided_schedule;
        else
          throw bad_option{"--schedule must be static, dynamic or guided, got '" + v + "'"};
      } else if (key == "--threads") {
        o.threads = static_cast<int>(parse_int(key, v.c_str(), 1, 4096));
      } else if (key == "--priority") {
        if (value == "critical")
          o.critical = options::critical_route::priority;
        else if (value == "pool")
          o.critical = options::critical_route::pool;
        else if (value == "none")
          o.critical = options::critical_route::none;
        else
          throw bad_option{"--priority must be critical, pool or none, got '" + v + "'"};
      } else if (key == "--domains-per-locality") {
        o.domains_per_locality = static_cast<int>(parse_int(key, v.c_str(), 1, 4096));
      } else if (key == "--partition") {
        o.partition = static_cast<index_t>(parse_int(key, v.c_str(), 1, int_max));
      } else if (key == "--inject") {
        const auto d = load_injection::distribution_from_name(value);
        if (!d)
          throw bad_option{
              "--inject must be uniform, scaled, gaussian, poisson or exponential, "
              "got '" +
              v + "'"};
        o.inject = true;
        o.load.dist = *d;
      } else if (key == "--inject-a") {
        o.load.a = parse_real(key, value);
      } else if (key == "--inject-b") {
        o.load.b = parse_real(key, value);
      } else if (key == "--inject-unit-us") {
        o.load.unit_us = parse_real(key, value);
      } else if (key == "--inject-fraction") {
        o.load.fraction = parse_real(key, value);
      } else if (key == "--inject-seed") {
        o.load.seed = static_cast<std::uint64_t>(parse_int(key, v.c_str(), 0, int_max));
      } else if (key == "--iters-per-us") {
        o.iters_per_us = parse_real(key, value);
        if (!(o.iters_per_us > 0)) throw bad_option{"--iters-per-us must be positive"};
      } else {
        throw bad_option{"ERROR: Unknown command line argument: " + std::string(a)};
      }
    }
  }
  if (o.domains_per_locality > 1 && o.var != variant::grain)
    throw bad_option{"--domains-per-locality needs --variant=grain"};
  if (o.inject) {
    try {
      load_injection::check(o.load);
    } catch (const std::exception& e) {
      throw bad_option{std::string("--inject: ") + e.what()};
    }
  }
  return o;
}

}  // namespace lulesh
