"""grain_experiments: what every experiment driver in scripts/ shares.

A driver (scripts/sweep-*, scripts/bench-*, scripts/characterise, ...) finds its programs in a
build tree, runs them interleaved over rounds, reads their run summaries, takes medians and
spreads, and writes CSV files and figures that carry where they were measured. Each of those
steps is one function here, so that a driver holds only what is its own: the configurations it
runs and the table it prints. Standard library only, and matplotlib for the figures (Debian's
python3 and python3-matplotlib). docs/experiments.md, "Writing an experiment script", shows
a driver in twenty lines.

The modules, one concept each:
  build       the binaries (--build-dir), mpirun's command line
  options     comma-separated lists of numbers on the command line
  runs        one run with a timeout; rounds of configurations, interleaved, with progress
  stats       medians and spreads
  provenance  commit, machine shape, load, date, command line
  results     the out/ folder (--out), CSV files, run summaries, tables written into docs
  figures     one style for every figure: title, axis names, spread, provenance footer
  source_peers  peers compiled from a source tree the user names (scripts/bench's libfork,
                Taskflow)
  interference  another process on the machine: a busy loop over a window of a run
"""

import sys
from pathlib import Path

from .build import ROOT, BuildError, add_build_options, find_binary, mpirun
from .figures import errorbars, finish, pyplot, subplots
from .interference import BusyLoop
from .options import number_list, numbers
from .provenance import footer, provenance
from .results import (add_out_option, out_dir, read_csv, read_summary, save_runs,
                      write_between_markers, write_csv, write_json)
from .runs import Progress, Run, interleaved, run
from .stats import describe, iqr, median, spread

__all__ = ["ROOT", "BuildError", "BusyLoop", "Progress", "Run", "add_build_options", "add_out_option",
           "describe", "die", "errorbars", "find_binary", "finish", "fmt_time", "footer",
           "interleaved", "iqr", "median", "mpirun", "note", "number_list", "numbers",
           "out_dir", "provenance", "pyplot", "read_csv", "read_summary", "run", "save_runs",
           "spread", "subplots", "write_between_markers", "write_csv", "write_json"]


def script_name():
    """scripts/NAME of the running driver, the prefix of its messages."""
    return "scripts/" + Path(sys.argv[0]).name


def die(msg, status=2):
    """Print `scripts/NAME: msg` to stderr and exit (2: bad usage, 1: a run failed)."""
    print(f"{script_name()}: {msg}", file=sys.stderr)
    sys.exit(status)


def note(msg):
    """A line for the reader on stderr (stdout holds the results)."""
    print(f"{script_name()}: {msg}", file=sys.stderr, flush=True)


def fmt_time(seconds):
    """A duration with its unit: µs below a millisecond, ms below a second, else s."""
    if seconds is None:
        return "—"
    if abs(seconds) < 1e-3:
        return ("%.0f µs" if abs(seconds) >= 1e-5 else "%.2f µs") % (seconds * 1e6)
    if abs(seconds) < 1:
        return "%.2f ms" % (seconds * 1e3)
    return "%.3f s" % seconds
