"""Peers built from a source tree the user names: header-only task libraries that the
repository does not vendor (libfork, Taskflow). scripts/bench --libfork-dir DIR and
--taskflow-dir DIR compile the benchmark's driver for them (apps/bench/bench_<name>.cpp, which
shares apps/bench/common/bench_common.hpp with every other system) against DIR with g++, into
the results folder, and rebuild it only when the command, the driver or a header in DIR changed.
"""

import os
import shlex
import subprocess
from pathlib import Path

from .build import ROOT

BENCH_SRC = ROOT / "apps" / "bench"


class PeerError(Exception):
    """The named directory does not hold the library, or its headers do not compile."""


# name -> (header that marks its include folder, how to find that folder under DIR,
#          -std values to try in order, what the user is told about the version it needs)
PEERS = {
    "libfork": ("libfork.hpp", ("include", "."), ("c++20", "c++2b"),
                "libfork 3 (C++20 coroutines; its CMake asks for C++23, the headers compile "
                "as C++20 with g++ 12)"),
    "taskflow": ("taskflow/taskflow.hpp", (".", ".."), ("c++20", "c++17"),
                 "Taskflow 4.0 or newer (tf::Executor::task_group)"),
}


def include_dir(name, directory):
    """The folder to pass with -I for peer `name` found in `directory` (its checkout, or its
    include folder); raises PeerError naming what was looked for."""
    header, subdirs, _, need = PEERS[name]
    d = Path(directory).expanduser().resolve()
    if not d.is_dir():
        raise PeerError(f"--{name}-dir {directory}: not a directory")
    for sub in subdirs:
        inc = (d / sub).resolve()
        if (inc / header).is_file():
            return inc
    looked = ", ".join(str((d / s).resolve() / header) for s in subdirs)
    raise PeerError(f"--{name}-dir {directory}: no {header} ({looked}); name a checkout of "
                    f"{need}")


def _newest_header(inc):
    newest = 0.0
    for root, _, files in os.walk(inc):
        for f in files:
            if f.endswith((".hpp", ".h", ".hh", ".ipp", ".tpp")):
                newest = max(newest, os.path.getmtime(os.path.join(root, f)))
    return newest


def _compile(cmd):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=900)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, str(e)
    return p.returncode == 0, p.stdout


def _first_error(output):
    lines = output.splitlines()
    errors = [i for i, line in enumerate(lines) if ": error:" in line or "#error" in line]
    if not errors:
        return "\n".join(lines[-8:])
    i = errors[0]
    return "\n".join(lines[max(0, i - 2):i + 4])


def build(name, directory, out, cxx="g++", note=print):
    """Compiles bench-<name> against `directory` into OUT/peers/ (unless it is up to date);
    returns its path. Raises PeerError with the compiler's first error when no -std that the
    peer accepts compiles it."""
    inc = include_dir(name, directory)
    _, _, stds, need = PEERS[name]
    src = BENCH_SRC / f"bench_{name}.cpp"
    dest_dir = Path(out) / "peers"
    dest_dir.mkdir(parents=True, exist_ok=True)
    exe = dest_dir / f"bench-{name}"
    stamp = dest_dir / f"bench-{name}.cmd"
    inputs = max(src.stat().st_mtime, (BENCH_SRC / "common" / "bench_common.hpp").stat().st_mtime,
                 _newest_header(inc))
    cmds = [[cxx, f"-std={std}", "-O2", "-DNDEBUG", "-pthread", "-Wno-interference-size",
             f"-I{BENCH_SRC}", f"-I{inc}", str(src), "-o", str(exe)] for std in stds]
    if exe.is_file() and stamp.is_file() and exe.stat().st_mtime >= inputs and \
            stamp.read_text().strip() in (shlex.join(c) for c in cmds):
        return exe
    log = dest_dir / f"bench-{name}.log"
    outputs = []
    for std, cmd in zip(stds, cmds):
        note(f"building bench-{name} from {inc}: {shlex.join(cmd)}")
        ok, output = _compile(cmd)
        outputs.append((std, output))
        log.write_text("".join(f"$ {shlex.join(c)}\n{o}\n" for c, (_, o) in zip(cmds, outputs)))
        if ok:
            stamp.write_text(shlex.join(cmd) + "\n")
            return exe
    tried = " and ".join(f"-std={s}" for s in stds)
    try:
        version = subprocess.run([cxx, "--version"], stdout=subprocess.PIPE, text=True,
                                 stderr=subprocess.DEVNULL).stdout.split("\n", 1)[0] or cxx
    except OSError:
        version = cxx
    raise PeerError(f"{name} in {inc} does not compile with {version} ({tried}); it needs "
                    f"{need}. First error with -std={outputs[0][0]} (the whole output: "
                    f"{log}):\n{_first_error(outputs[0][1])}")


def origin(name, directory):
    """Where the peer's source came from, for the table's header: ' (git commit C)' when
    `directory` is a git checkout, else ''."""
    try:
        p = subprocess.run(["git", "-C", str(directory), "log", "-1", "--format=%h %cs"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                           timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return f" ({name} commit {p.stdout.strip()})" if p.returncode == 0 and p.stdout.strip() else ""


def command(exe):
    """The compiler command that built `exe` (from its stamp)."""
    stamp = Path(exe).with_name(Path(exe).name + ".cmd")
    return stamp.read_text().strip() if stamp.is_file() else "?"
