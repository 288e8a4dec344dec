// bench-apps-serial: the Grubel, Lelbach, Kaiser 2016 applications run serially (the same
// decompositions without tasks): the T_serial reference and the result every bench-apps-<system>
// must reproduce.
#include "common/apps_bench.hpp"

int main(int argc, char** argv) {
  const bench::apps::options o = bench::apps::parse(argc, argv);
  bench::apps::serial_system sys;
  return bench::apps::run_and_report("serial", o, 1, sys);
}
