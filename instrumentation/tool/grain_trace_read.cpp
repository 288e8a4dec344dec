// grain-trace-read: the event pass of scripts/grain-trace and of the Python package
// (python/grain_analysis) in C++. Reads any OTF2 archive through grain's OTF2 pass
// (src/trace/otf2_walk.hpp: the OTF2 C API's global, time-ordered event reader, as otf2-print;
// read_otf2 is its other consumer). The python3-otf2 reader builds a Python object per event
// (~30 µs each); this pass aggregates in place (trace_state.hpp), so the script takes about
// otf2-print's time.
//   grain-trace-read [--metrics] ARCHIVE   one JSON document: per location span, busy, idle;
//                                          per region counts and times; the decisions; with
//                                          --metrics the metric samples (json_output.hpp)
//   grain-trace-read --columns ARCHIVE     every region interval, metric sample and message as
//                                          binary columns after a JSON header (columns.hpp)
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "columns.hpp"
#include "json_output.hpp"

namespace {

namespace tr = grain::trace_read;

int fail(const std::string& what) {
  std::fprintf(stderr, "grain-trace-read: %s\n", what.c_str());
  return 1;
}

const char* const usage = "usage: grain-trace-read [--metrics | --columns] ARCHIVE.otf2";

}  // namespace

int main(int argc, char** argv) {
  bool metrics = false, as_columns = false;
  const char* anchor = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--metrics") == 0)
      metrics = true;
    else if (std::strcmp(argv[i], "--columns") == 0)
      as_columns = true;
    else if (!anchor && argv[i][0] != '-')
      anchor = argv[i];
    else
      return fail(std::string("unknown argument ") + argv[i] + " (" + usage + ")");
  }
  if (!anchor) return fail(usage);
  tr::columns cols;
  tr::state agg;
  tr::state& s = as_columns ? cols : agg;
  s.want_metrics = metrics || as_columns;
  try {
    tr::walk::walker().walk(anchor, s);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  s.finish();
  if (as_columns) return cols.print(stdout) ? 0 : fail("cannot write the output");
  tr::print_aggregate(agg, stdout);
  return std::fflush(stdout) == 0 && !std::ferror(stdout) ? 0 : fail("cannot write the output");
}
