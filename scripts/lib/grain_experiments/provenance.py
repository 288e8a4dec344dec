"""Where and when a measurement was made: commit, machine shape, load, date, command line.

Every CSV folder gets it as provenance.json and every figure as its footer, so that a figure
read months later still says which code on which machine drew it. The machine is described
by its shape (CPU model, cores, memory), not its name.
"""

import datetime
import os
import platform
import shlex
import subprocess
import sys

from .build import ROOT


def _git(*args):
    try:
        p = subprocess.run(["git", "-C", str(ROOT)] + list(args), capture_output=True,
                           text=True, timeout=10)
        return p.stdout.strip() if p.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "?"


def _memory_gib():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal"):
                    return round(int(line.split()[1]) / 1024 / 1024)
    except (OSError, ValueError):
        pass
    return None


def load_average():
    """The 1-minute load average (other users of a shared machine), None where unknown."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def provenance(argv=None, **extra):
    """A dict: commit, dirty (uncommitted changes), cpu, cores, memory_gib, kernel, load,
    date (UTC), command; `extra` adds the driver's own (the binaries' folder, say)."""
    argv = sys.argv if argv is None else argv
    status = _git("status", "--porcelain", "--untracked-files=no")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    info = {
        "commit": _git("rev-parse", "--short", "HEAD") or "?",
        "dirty": bool(status) if status is not None else None,
        "cpu": _cpu_model(),
        "cores": cores,
        "memory_gib": _memory_gib(),
        "kernel": platform.release(),
        "load": load_average(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": "scripts/" + os.path.basename(argv[0]) +
                   "".join(" " + shlex.quote(a) for a in argv[1:]),
    }
    info.update(extra)
    return info


def machine(info):
    """'a 2-core machine (AMD EPYC 7B13, 8 GiB)': the shape, for a sentence or a footer."""
    mem = f", {info['memory_gib']} GiB" if info.get("memory_gib") else ""
    return f"a {info.get('cores', '?')}-core machine ({info.get('cpu', '?')}{mem})"


def commit_text(info):
    """'3f2a1bc' or '3f2a1bc with uncommitted changes'."""
    return info.get("commit", "?") + (" with uncommitted changes" if info.get("dirty") else "")


def footer(info):
    """One line for the foot of a figure: machine, load, commit, date."""
    if not info:
        return ""
    load = f", load {info['load']}" if info.get("load") is not None else ""
    return (f"{machine(info)}{load}; grain commit {commit_text(info)}; "
            f"{info.get('date', '?')}")
