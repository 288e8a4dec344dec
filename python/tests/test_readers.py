"""The two readers (grain-trace-read --columns and python3-otf2) give the same tables; bad
input gets a clear error."""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import grain_analysis as ga
from grain_analysis import _reader
from conftest import SRC, binary


def have_otf2():
    try:
        import otf2  # noqa: F401
        return True
    except ImportError:
        return False


needs_otf2 = pytest.mark.skipif(not have_otf2(), reason="python3-otf2 does not import here "
                                "(Debian's imports only under /usr/bin/python3)")


@needs_otf2
@pytest.mark.parametrize("run", ["one_rank", "two_ranks"])
def test_python_reader_gives_the_same_tables(run, request):
    d = request.getfixturevalue(run)["dir"]
    fast = _reader.read_raw(d, binary("grain-trace-read"))
    slow = _reader.read_raw(d, "python")
    for key in ("resolution", "offset", "length", "command", "start_time", "locations",
                "regions", "metrics", "units", "decisions"):
        assert fast.header[key] == slow.header[key], key
    for table, cols in fast.tables.items():
        for col, values in cols.items():
            assert np.array_equal(values, slow.tables[table][col]), (table, col)


@needs_otf2
def test_fallback_warns(one_rank, monkeypatch):
    monkeypatch.setattr(_reader, "find_reader", lambda: None)
    with pytest.warns(RuntimeWarning, match="python3-otf2"):
        t = ga.read_trace(one_rank["dir"])
    assert len(t.tasks) > 0


def test_missing_and_foreign_input(tmp_path):
    with pytest.raises(ga.TraceError, match="does not exist"):
        ga.read_trace(tmp_path / "nothing")
    with pytest.raises(ga.TraceError, match="no .otf2 anchor"):
        ga.read_trace(tmp_path)
    (tmp_path / "trace.pftrace").write_bytes(b"\x0a\x00")
    with pytest.raises(ga.TraceError, match="Perfetto"):
        ga.read_trace(tmp_path)


def test_corrupt_archive_is_reported(tmp_path):
    bad = tmp_path / "traces.otf2"
    bad.write_text("not an archive\n")
    with pytest.raises(ga.TraceError, match="traces.otf2"):
        ga.read_trace(bad)


def test_reader_that_is_not_executable(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAIN_TRACE_READER", str(tmp_path / "missing"))
    with pytest.raises(ga.TraceError, match="not an executable"):
        ga.read_trace(tmp_path)


def test_bad_csv_and_summary(tmp_path):
    f = tmp_path / "c.csv"
    f.write_text('time_s,counter,value\n0.1,"/threads{locality#0/total}/idle-rate",0.5\n'
                 "grain-stencil: 10 points\n")
    with pytest.raises(ValueError, match=r"c.csv:3: not a counter line"):
        ga.read_counters_csv(f)
    f.write_text('time_s,counter,value\n0.1,"/threads{locality#0/total}/idle-rate",\n')
    df = ga.read_counters_csv(f)
    assert np.isnan(df["value"].iloc[0]) and df["locality"].iloc[0] == 0
    s = tmp_path / "s.json"
    s.write_text("{")
    with pytest.raises(ValueError, match="not a JSON document"):
        ga.read_summary(s)
    s.write_text("[]")
    with pytest.raises(ValueError, match="not a grain run summary"):
        ga.read_summary(s)


def test_counter_names():
    from grain_analysis.names import instance_parts, split_name
    assert split_name("/threads{locality#0/pool#default/worker#1}/idle-rate") == \
        ("threads", "locality#0/pool#default/worker#1", "idle-rate")
    assert split_name("/app/iteration-time") == ("app", "", "iteration-time")
    assert split_name("knob:stencil.nx") == ("knob", "", "stencil.nx")
    assert instance_parts("locality#0/pool#default/worker-thread#3") == \
        {"locality": 0, "pool": "default", "worker": 3}
    assert instance_parts("locality#1/total") == {"locality": 1, "total": True}


def test_pip_installs_the_package(tmp_path):
    """pip install ./python into a venv (the system's pandas through --system-site-packages),
    then the package imports from outside the source tree."""
    import shutil
    src = tmp_path / "src"  # pip builds in the folder it is given: a copy keeps the tree clean
    shutil.copytree(os.path.join(SRC, "python"), src,
                    ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True)
    py = str(venv / "bin" / "python")
    p = subprocess.run([py, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
                        "--quiet", str(src)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert p.returncode == 0, p.stdout
    p = subprocess.run([py, "-c", "import grain_analysis as ga; print(ga.__file__)"],
                       cwd=str(tmp_path), stdout=subprocess.PIPE, text=True, check=True)
    assert p.stdout.startswith(str(venv))
