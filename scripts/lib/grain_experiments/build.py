"""Where a driver's programs are: one --build-dir option for every driver.

Without --build-dir a program is looked for in the repository's build/bin, then in the
installed prefix (on PATH: `cmake --install` puts the programs into PREFIX/bin). A missing
program is an error that names where it was looked for and the command that builds it.
"""

import argparse
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]  # scripts/lib/grain_experiments/build.py


class BuildError(Exception):
    """A program the driver needs is not built."""


class _DeprecatedBuild(argparse.Action):
    """--build DIR: the old spelling of --build-dir, still accepted with a note."""

    def __call__(self, parser, namespace, values, option_string=None):
        name = "scripts/" + os.path.basename(sys.argv[0])
        print(f"{name}: {option_string} is deprecated; use --build-dir {values}",
              file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_build_options(parser):
    """--build-dir DIR (and its deprecated spelling --build) on an argparse parser."""
    parser.add_argument("--build-dir", metavar="DIR", default=None,
                        help="build tree whose bin/ holds the programs (default: build/, "
                             "then the installed prefix on PATH)")
    parser.add_argument("--build", dest="build_dir", action=_DeprecatedBuild,
                        help=argparse.SUPPRESS)


def _resolve(build_dir):
    d = Path(build_dir)
    if d.is_absolute():
        return d
    return d if d.exists() or not (ROOT / d).exists() else ROOT / d


def find_binary(name, build_dir=None):
    """The path of program `name`: DIR/bin/NAME (or DIR/NAME when DIR is itself a bin folder)
    with a build_dir, else build/bin/NAME, then NAME on PATH. Raises BuildError naming the
    places looked at and how to build the program."""
    if build_dir is not None:
        d = _resolve(build_dir)
        for p in (d / "bin" / name, d / name):
            if p.is_file() and os.access(p, os.X_OK):
                return p
        tree = d.parent if d.name == "bin" else d
        raise BuildError(f"{name} is not built: no {d / 'bin' / name} "
                         f"(build it: cmake --build {tree} --target {name})")
    p = ROOT / "build" / "bin" / name
    if p.is_file() and os.access(p, os.X_OK):
        return p
    installed = shutil.which(name)
    if installed:
        return Path(installed)
    raise BuildError(f"{name} is not built: not in {ROOT / 'build' / 'bin'} nor installed on "
                     f"PATH (build it: cmake --build build --target {name}, or name another "
                     f"build tree with --build-dir DIR)")


def mpirun(ranks, bind_none=False, extra=()):
    """Open MPI's launcher for `ranks` processes on this machine: oversubscribed (more ranks
    than cores is how a small machine runs them), as root when that is who we are."""
    cmd = ["mpirun", "-np", str(ranks), "--oversubscribe"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    if bind_none:
        # Open MPI binds each of up to 2 ranks to ONE core: a rank's threads would share it.
        cmd += ["--bind-to", "none"]
    return cmd + list(extra)
