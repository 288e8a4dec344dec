"""Tests of grain_experiments (python3 -m pytest scripts/lib): statistics, the interleaving
order, the CSV round trip, provenance, the build-dir lookup and its error, run summaries."""

import json
import os
import random
import stat
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import grain_experiments as gx  # noqa: E402
from grain_experiments import build  # noqa: E402


def test_median_and_spread_leave_missing_values_out():
    assert gx.median([3, 1, 2]) == 2
    assert gx.median([4, 1, None, 3, 2]) == 2.5
    assert gx.median([]) is None and gx.median([None, ""]) is None
    assert gx.spread([5, None, 1, 3]) == (1, 5)
    assert gx.spread([]) == (None, None)


def test_iqr_and_describe():
    assert gx.iqr([1, 2, 3, 4, 5]) == (2, 4)
    assert gx.iqr([7]) == (7, 7)
    d = gx.describe([10, None, 30, 20])
    assert d == {"n": 3, "median": 20, "min": 10, "max": 30, "q1": 15, "q3": 25}


def test_rounds_are_interleaved():
    order = [(r, c) for r, c in gx.interleaved(["A", "B", "C"], 3, progress=False)]
    assert [c for _, c in order] == list("ABCABCABC")
    assert [r for r, _ in order] == [0, 0, 0, 1, 1, 1, 2, 2, 2]


def test_shuffled_rounds_hold_every_configuration_once_per_round():
    order = list(gx.interleaved(range(6), 4, shuffle=random.Random(1), progress=False))
    for r in range(4):
        assert sorted(c for rr, c in order if rr == r) == list(range(6))
    assert [c for _, c in order[:6]] != [c for _, c in order[6:12]]  # shuffled anew


def test_progress_reports_rounds_and_time_left(capsys):
    list(gx.interleaved("AB", 2, name="scripts/x"))
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("scripts/x: round 1/2 done, about ") and err[0].endswith(" left")
    assert err[1].startswith("scripts/x: round 2/2 done in ")


def test_csv_round_trip(tmp_path):
    rows = [{"mode": "static", "nx": 100, "time_s": 0.25, "idle": None},
            {"mode": "off", "nx": 7, "time_s": 1.5, "idle": 0.125, "extra": "x y"}]
    path = gx.write_csv(tmp_path / "runs.csv", rows)
    back = gx.read_csv(path)
    assert back[0] == {"mode": "static", "nx": 100, "time_s": 0.25, "idle": None, "extra": None}
    assert back[1] == rows[1]
    assert isinstance(back[0]["nx"], int) and isinstance(back[0]["time_s"], float)
    # A column named as text stays text even when it looks like a number.
    gx.write_csv(tmp_path / "t.csv", [{"layout": "2", "v": 1}])
    assert gx.read_csv(tmp_path / "t.csv", strings=("layout",)) == [{"layout": "2", "v": 1}]


def test_provenance_keys():
    info = gx.provenance(["/x/scripts/sweep-grain", "--runs=3", "--extra=a b"], binary="b")
    for key in ("commit", "dirty", "cpu", "cores", "memory_gib", "kernel", "load", "date",
                "command"):
        assert key in info, key
    assert info["command"] == "scripts/sweep-grain --runs=3 '--extra=a b'"
    assert info["binary"] == "b"
    assert isinstance(info["cores"], int) and info["cores"] >= 1
    assert info["date"].endswith("UTC")
    text = gx.footer(info)
    assert f"a {info['cores']}-core machine" in text and info["commit"] in text


def _program(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\necho ran\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_build_dir_lookup(tmp_path):
    prog = _program(tmp_path / "b" / "bin" / "grain-demo")
    assert gx.find_binary("grain-demo", tmp_path / "b") == prog
    assert gx.find_binary("grain-demo", tmp_path / "b" / "bin") == prog  # a bin folder itself


def test_build_dir_lookup_names_what_is_missing_and_how_to_build_it(tmp_path):
    with pytest.raises(gx.BuildError) as e:
        gx.find_binary("grain-nothing", tmp_path / "b")
    msg = str(e.value)
    assert "grain-nothing is not built" in msg
    assert str(tmp_path / "b" / "bin" / "grain-nothing") in msg
    assert f"cmake --build {tmp_path / 'b'} --target grain-nothing" in msg


def test_default_lookup_tries_build_then_the_installed_prefix(tmp_path, monkeypatch):
    monkeypatch.setattr(build, "ROOT", tmp_path / "repo")
    monkeypatch.setenv("PATH", str(tmp_path / "prefix" / "bin"))
    with pytest.raises(gx.BuildError) as e:
        gx.find_binary("grain-demo")
    assert str(tmp_path / "repo" / "build" / "bin") in str(e.value)
    assert "installed on PATH" in str(e.value) and "--build-dir" in str(e.value)
    installed = _program(tmp_path / "prefix" / "bin" / "grain-demo")
    assert gx.find_binary("grain-demo") == installed
    built = _program(tmp_path / "repo" / "build" / "bin" / "grain-demo")
    assert gx.find_binary("grain-demo") == built


def test_deprecated_build_option_is_build_dir(capsys):
    import argparse
    ap = argparse.ArgumentParser(prog="scripts/x")
    gx.add_build_options(ap)
    assert ap.parse_args(["--build-dir", "b1"]).build_dir == "b1"
    assert ap.parse_args(["--build=b2"]).build_dir == "b2"
    assert "--build is deprecated; use --build-dir b2" in capsys.readouterr().err
    assert ap.parse_args([]).build_dir is None


def test_run_reports_failures_and_timeouts():
    r = gx.run([sys.executable, "-c", "print('{\"a\": 1}'); print('x'); raise SystemExit(3)"])
    assert not r.ok and r.returncode == 3 and r.json_lines() == [{"a": 1}]
    assert "exited 3" in r.describe()
    r = gx.run([sys.executable, "-c", "import time; time.sleep(5)"], timeout=0.2)
    assert r.timed_out and not r.ok and "timed out" in r.describe()
    r = gx.run(["/no/such/program"])
    assert not r.ok


def test_read_summary(tmp_path):
    (tmp_path / "s.json").write_text(json.dumps({"counters": {"/a": 1}, "knobs": {}}))
    assert gx.read_summary(tmp_path / "s.json")["counters"] == {"/a": 1}
    (tmp_path / "bad.json").write_text("[1]")
    with pytest.raises(ValueError, match="not a run summary"):
        gx.read_summary(tmp_path / "bad.json")
    with pytest.raises(ValueError, match="no run summary"):
        gx.read_summary(tmp_path / "none.json")


def test_write_between_markers(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("head\n<!-- b -->\nold\n<!-- e -->\ntail\n")
    gx.write_between_markers(page, "<!-- b -->", "<!-- e -->", "new table")
    assert page.read_text() == "head\n<!-- b -->\nnew table\n<!-- e -->\ntail\n"
    page.write_text("no markers")
    with pytest.raises(ValueError):
        gx.write_between_markers(page, "<!-- b -->", "<!-- e -->", "x")
    assert page.read_text() == "no markers"


def test_out_dir_defaults_to_the_ignored_out_folder(tmp_path):
    assert gx.out_dir(None, "sweep-x", create=False) == gx.ROOT / "out" / "sweep-x"
    assert gx.out_dir(tmp_path / "o", "sweep-x") == tmp_path / "o"
    assert (tmp_path / "o").is_dir()


def test_fmt_time():
    assert gx.fmt_time(2.5e-6) == "2.50 µs"
    assert gx.fmt_time(733e-6) == "733 µs"
    assert gx.fmt_time(0.0125) == "12.50 ms"
    assert gx.fmt_time(1.5) == "1.500 s"
    assert gx.fmt_time(None) == "—"


def test_figure_has_footer_and_is_written(tmp_path):
    plt = gx.pyplot()
    if plt is None:
        pytest.skip("matplotlib is missing")
    fig, ax = gx.subplots(plt)
    gx.errorbars(ax, [1, 2, 3], [1.0, None, 2.0], [0.5, None, 1.5], [1.5, None, 2.5], label="a")
    ax.set_xlabel("x (units)")
    info = gx.provenance(["scripts/t"])
    path = gx.finish(plt, fig, tmp_path / "f.png", "A title", info)
    assert path.exists() and path.stat().st_size > 5000
    assert os.path.getsize(path) > 0


# The drivers built on the library, with the arguments that make each one look for its
# programs (a missing build must stop it before anything runs).
SCRIPTS = Path(__file__).resolve().parent.parent
DRIVERS = {
    "ab-pingpong": None, "bench": [], "bench-apps": [], "bench-dashboard": [],
    "bench-grain-policy": [], "bench-localities": [], "bench-pingpong": [],
    "bench-trace-formats": [], "characterise": ["pyramids"], "sweep-coalescing": [],
    "sweep-collectives": [], "sweep-grain": [], "sweep-inline": [], "sweep-loop": [],
    "sweep-pools": ["--workers=2"],
}


def _driver(name, *args, env=None):
    import subprocess
    return subprocess.run([str(SCRIPTS / name)] + list(args), capture_output=True, text=True,
                          timeout=60, env=env)


@pytest.mark.parametrize("name", sorted(DRIVERS))
def test_driver_uses_the_library_and_answers_help(name):
    assert "import grain_experiments as gx" in (SCRIPTS / name).read_text()
    r = _driver(name, "--help")
    assert r.returncode == 0, r.stderr
    if DRIVERS[name] is not None:
        assert "--build-dir" in r.stdout


@pytest.mark.parametrize("name", sorted(n for n, a in DRIVERS.items() if a is not None))
def test_driver_names_a_missing_build_and_how_to_build_it(name, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "GRAIN_STENCIL"}
    r = _driver(name, *DRIVERS[name], "--build-dir", str(tmp_path / "nobuild"),
                "--out", str(tmp_path / "out"), env=env)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "is not built" in r.stderr and f"cmake --build {tmp_path / 'nobuild'}" in r.stderr


def test_old_build_spelling_still_works_with_a_note(tmp_path):
    r = _driver("bench-localities", "--build", str(tmp_path / "old"))
    assert r.returncode == 2
    assert f"--build is deprecated; use --build-dir {tmp_path / 'old'}" in r.stderr
    assert "grain-stencil is not built" in r.stderr


def test_number_lists():
    assert gx.number_list("1, 2,4") == [1, 2, 4]
    assert gx.number_list("0.5,2", float, 0) == [0.5, 2.0]
    for bad, msg in (("1,x", "not a list of integers"), ("", "empty"),
                     ("0,3", "need integers >= 1")):
        with pytest.raises(ValueError, match=msg):
            gx.number_list(bad, int, 1)
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--nx", type=gx.numbers(int, 1))
    assert ap.parse_args(["--nx=10,20"]).nx == [10, 20]
    with pytest.raises(SystemExit) as e:
        ap.parse_args(["--nx=10,-1"])
    assert e.value.code == 2


def test_busy_loop_spins_over_its_window_only():
    import time
    busy = gx.BusyLoop(start=0.05, stop=0.45)
    busy.arm()
    time.sleep(0.2)
    assert busy.proc is not None and busy.proc.poll() is None  # spinning inside the window
    time.sleep(0.5)
    assert busy.proc.returncode is not None  # stopped at `stop`, before close()
    busy.close()
    assert 0 < busy.cpu_s < 0.6
    never = gx.BusyLoop(start=5)
    with never:
        pass  # the run ended before the window began: nothing was started
    assert never.proc is None and never.cpu_s == 0
