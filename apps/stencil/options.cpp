#include "options.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string_view>

namespace stencil {

namespace {

std::size_t parse_count(std::string_view option, std::string_view text) {
  std::size_t v = 0;
  const auto* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || p != end)
    throw std::invalid_argument(std::string(option) + " needs a non-negative integer, got '" +
                                std::string(text) + "'");
  return v;
}

std::size_t parse_positive(std::string_view option, std::string_view text) {
  const std::size_t v = parse_count(option, text);
  if (v == 0) throw std::invalid_argument(std::string(option) + " must be at least 1, got 0");
  return v;
}

double parse_real(std::string_view option, std::string_view text) {
  const std::string s(text);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v))
    throw std::invalid_argument(std::string(option) + " needs a finite number, got '" + s + "'");
  return v;
}

}  // namespace

std::string usage() {
  return "usage: grain-stencil [--nx=N] [--np=N | --points=N] [--nt=N] [--k=X] [--dt=X] [--dx=X]\n"
         "                     [--verify] [--results] [--print-steps] [--repeat=R]\n"
         "                     [--check-every=K] [--window=W] [--max-window=M]\n"
         "                     [--submit-chunk=N] [--settle=K]\n"
         "                     [--repartition-at=STEP:NX]... [--localities]\n"
         "                     [--grain:...]\n"
         "  --nx=N            points per partition (default 10); the knob stencil.nx starts here\n"
         "  --np=N            partitions (default 10); total points = nx * np\n"
         "  --points=N        total points instead of --np; np = ceil(N / nx), last one smaller\n"
         "  --nt=N            time steps (default 45)\n"
         "  --k, --dt, --dx   heat transfer coefficient (0.5), time step (1), grid spacing (1)\n"
         "  --verify          compare with a serial computation; exit 1 on a mismatch\n"
         "  --results         print the final values of every partition\n"
         "  --print-steps     print every time step's duration, nx and partitions\n"
         "  --repeat=R        run R times (each from the initial nx)\n"
         "  --check-every=K   read the knob stencil.nx every K step boundaries (default 1)\n"
         "  --window=W        at most W time steps in flight while the grain is new: for 4\n"
         "                    steps after the start and after a re-partitioning (default 2;\n"
         "                    0: all steps at once)\n"
         "  --max-window=M    at most M steps in flight once the grain is stable (default: 4,\n"
         "                    or W if larger)\n"
         "  --submit-chunk=N  create a step's dataflows in tasks of N partitions (default 1024;\n"
         "                    0: the driver task creates them all)\n"
         "  --settle=K        submit each of steps 1..K only after the step before it ended\n"
         "                    and the policies handled its iteration event, so that their\n"
         "                    first decisions act on the next step (default 1; 0: never)\n"
         "  --settle-init=0|1 write a probe of the initial condition at the starting grain and\n"
         "                    let the policies answer it before step 0; the rest at their\n"
         "                    grain (default 1)\n"
         "  --split=0|1       a running partition splits the points it has left into chunks\n"
         "                    of stencil.nx when the knob drops to half of them (default 1)\n"
         "  --repartition-at=STEP:NX  set stencil.nx to NX before STEP (repeatable)\n"
         "  --midstep-at=STEP:NX  set stencil.nx to NX right after STEP was submitted, while\n"
         "                    it runs (repeatable)\n"
         "  --localities      spread the ring over every locality (mpirun -np N): each rank\n"
         "                    steps its block, ghost points travel as parcels; the knob\n"
         "                    stencil.nx partitions each rank's block (docs/distributed.md)\n";
}

options parse_options(int argc, char** argv) {
  options o;
  bool have_np = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a.rfind("--grain:", 0) == 0) continue;
    const auto eq = a.find('=');
    const std::string_view name = a.substr(0, eq);
    const std::string_view value =
        eq == std::string_view::npos ? std::string_view() : a.substr(eq + 1);
    const bool has_value = eq != std::string_view::npos;
    auto need_value = [&] {
      if (!has_value)
        throw std::invalid_argument(std::string(name) + " needs a value: " + std::string(name) +
                                    "=...");
    };
    auto no_value = [&] {
      if (has_value) throw std::invalid_argument(std::string(name) + " takes no value");
    };
    if (name == "--nx") {
      need_value();
      o.nx = parse_positive(name, value);
    } else if (name == "--np") {
      need_value();
      o.np = parse_positive(name, value);
      have_np = true;
    } else if (name == "--points") {
      need_value();
      o.points = parse_positive(name, value);
    } else if (name == "--nt") {
      need_value();
      o.nt = parse_count(name, value);
    } else if (name == "--k") {
      need_value();
      o.params.k = parse_real(name, value);
    } else if (name == "--dt") {
      need_value();
      o.params.dt = parse_real(name, value);
    } else if (name == "--dx") {
      need_value();
      o.params.dx = parse_real(name, value);
      if (o.params.dx == 0) throw std::invalid_argument("--dx must not be 0");
    } else if (name == "--verify") {
      no_value();
      o.verify = true;
    } else if (name == "--results") {
      no_value();
      o.results = true;
    } else if (name == "--print-steps") {
      no_value();
      o.print_steps = true;
    } else if (name == "--localities") {
      no_value();
      o.localities = true;
    } else if (name == "--repeat") {
      need_value();
      const std::size_t r = parse_positive(name, value);
      if (r > 1000000) throw std::invalid_argument("--repeat is at most 1000000");
      o.repeat = static_cast<int>(r);
    } else if (name == "--check-every") {
      need_value();
      o.check_every = parse_positive(name, value);
    } else if (name == "--max-window") {
      need_value();
      o.max_window = parse_positive(name, value);
    } else if (name == "--window") {
      need_value();
      o.window = parse_count(name, value);
    } else if (name == "--settle") {
      need_value();
      o.settle = parse_count(name, value);
    } else if (name == "--submit-chunk") {
      need_value();
      o.submit_chunk = parse_count(name, value);
    } else if (name == "--settle-init" || name == "--split") {
      need_value();
      if (value != "0" && value != "1")
        throw std::invalid_argument(std::string(name) + " is 0 or 1, got '" + std::string(value) +
                                    "'");
      (name == "--split" ? o.split : o.settle_init) = value == "1";
    } else if (name == "--repartition-at" || name == "--midstep-at") {
      need_value();
      const auto colon = value.find(':');
      if (colon == std::string_view::npos)
        throw std::invalid_argument(std::string(name) + " needs STEP:NX, got '" +
                                    std::string(value) + "'");
      (name == "--midstep-at" ? o.midstep_at : o.repartition_at)
          .emplace_back(parse_count(name, value.substr(0, colon)),
                        parse_positive(name, value.substr(colon + 1)));
    } else if (name == "--help" || name == "-h") {
      o.help = true;
    } else {
      throw std::invalid_argument("unknown option '" + std::string(a) + "'");
    }
  }
  if (o.window != 0 && o.max_window != 0 && o.max_window < o.window)
    throw std::invalid_argument("--max-window=" + std::to_string(o.max_window) +
                                " is smaller than --window=" + std::to_string(o.window));
  if (have_np && o.points != 0)
    throw std::invalid_argument("give either --np or --points, not both");
  if (o.points == 0 && o.np > std::numeric_limits<std::size_t>::max() / o.nx)
    throw std::invalid_argument("--nx * --np is too large");
  if (o.points != 0 && o.nx > o.points)
    throw std::invalid_argument("--nx=" + std::to_string(o.nx) +
                                " is larger than --points=" + std::to_string(o.points));
  for (const auto* at : {&o.repartition_at, &o.midstep_at}) {
    const std::string opt = at == &o.midstep_at ? "--midstep-at" : "--repartition-at";
    for (const auto& [step, nx] : *at) {
      if (step >= o.nt)
        throw std::invalid_argument(opt + " step " + std::to_string(step) +
                                    " is not below --nt=" + std::to_string(o.nt));
      if (nx > o.total())
        throw std::invalid_argument(opt + " nx " + std::to_string(nx) + " is larger than the " +
                                    std::to_string(o.total()) + " points of the ring");
    }
  }
  return o;
}

}  // namespace stencil
