"""Fixtures: traces written by grain's programs from a build (GRAIN_BUILD_DIR, default build/
of this source tree): one rank, and two ranks under mpirun."""
import os
import shutil
import subprocess
import sys

import pytest

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SRC, "python"))  # the package from this tree, uninstalled

BUILD = os.path.abspath(os.environ.get("GRAIN_BUILD_DIR", os.path.join(SRC, "build")))
POLICY = os.path.join(SRC, "policies-lua", "adaptive_grain.lua")
PHASES = "/threads{locality#*/total}/count/cumulative-phases"


def binary(name):
    path = os.path.join(BUILD, "bin", name)
    if not os.access(path, os.X_OK):
        pytest.fail("%s is not built (GRAIN_BUILD_DIR=%s; build the target %s)"
                    % (path, BUILD, name))
    return path


def run(cmd, **kw):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if p.returncode != 0:
        pytest.fail("%s exited %d:\n%s" % (" ".join(cmd), p.returncode, p.stdout[-4000:]))
    return p.stdout


@pytest.fixture(autouse=True)
def reader_of_this_build(monkeypatch):
    """The package reads through this build's grain-trace-read (tests that want another
    reader say so)."""
    monkeypatch.setenv("GRAIN_TRACE_READER", binary("grain-trace-read"))


@pytest.fixture(scope="session")
def one_rank(tmp_path_factory):
    """grain-stencil on one rank with adaptive_grain.lua: trace, summary.json, counter CSV.
    2,000 partitions at the start: the policy's first decision comes from the probe of the
    initial condition (1/16 of them), before step 0. With 400 (25 probed, too few tasks for a
    verdict) it waited for counter windows, and on a loaded machine the 22 ms run sometimes
    ended without a decision (2 of 20 runs beside three busy loops; none of 20 now)."""
    base = tmp_path_factory.mktemp("one")
    d = base / "trace"  # must not exist: grain creates it
    out = run([binary("grain-stencil"), "--points=2000000", "--nx=1000", "--nt=60",
               "--grain:threads=2", "--grain:policy=" + POLICY, "--grain:trace=%s" % d,
               "--grain:summary=%s/summary.json" % base,
               "--grain:trace-counters=/threads{locality#0/total}/idle-rate",
               "--grain:trace-counters=/app/iteration-time",
               "--grain:print-counter=/threads{locality#0/total}/count/cumulative-phases",
               "--grain:print-counter=/threads{locality#0/pool#default/worker#*}/idle-rate",
               "--grain:print-counter-interval=20",
               "--grain:print-counter-destination=%s/counters.csv" % base])
    return {"dir": str(d), "output": out, "summary": str(base / "summary.json"),
            "csv": str(base / "counters.csv")}


@pytest.fixture(scope="session")
def two_ranks(tmp_path_factory):
    """grain-stencil on 2 MPI ranks (one worker each) with adaptive_grain.lua, traced; the
    ranks' final task-phase counters are in the output."""
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        pytest.skip("no mpirun (Open MPI) on this machine")
    d = tmp_path_factory.mktemp("two") / "trace"
    out = run([mpirun, "-np", "2", "--oversubscribe", "--allow-run-as-root",
               binary("grain-stencil"), "--localities", "--points=30000", "--nx=500", "--nt=20",
               "--verify", "--grain:threads=1", "--grain:oversubscribe",
               "--grain:trace=%s" % d, "--grain:policy=" + POLICY,
               "--grain:print-counter=" + PHASES], timeout=300)
    if "localities x" not in out:
        pytest.skip("grain-stencil was built without MPI")
    return {"dir": str(d), "output": out}


def cxx_aggregate(trace_dir):
    """grain-trace-read's own aggregate (its JSON mode: computed in C++, not from columns)."""
    import json
    from grain_analysis._reader import anchor_of
    out = subprocess.run([binary("grain-trace-read"), "--metrics", anchor_of(trace_dir)],
                         stdout=subprocess.PIPE, check=True).stdout
    return json.loads(out)
