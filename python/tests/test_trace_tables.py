"""The trace tables against what the runtime counted and against grain-trace-read's own C++
aggregation, on one rank and on two."""
import json
import os
import re

import numpy as np
import pandas as pd
import pytest

import grain_analysis as ga
from conftest import cxx_aggregate


def phases_printed(output):
    """{rank: final /threads{locality#R/total}/count/cumulative-phases} from printed CSV."""
    return {int(r): int(v) for r, v in re.findall(
        r'"/threads\{locality#(\d+)/total\}/count/cumulative-phases",(\d+)', output)}


def check_summary_equals_cxx(trace_dir):
    t = ga.read_trace(trace_dir)
    s = t.summary()
    cxx = cxx_aggregate(trace_dir)
    assert len(cxx["locations"]) == len(s.locations)
    for want, got in zip(cxx["locations"], s.locations.to_dict("records")):
        for key in ("ref", "name", "type", "events", "busy", "idle", "phases", "sent",
                    "received", "sent_bytes", "received_bytes"):
            assert got[key] == want[key], (key, want["name"])
        if want["first"] is not None:
            assert (got["first"], got["last"]) == (want["first"], want["last"])
    assert [r["name"] for r in cxx["regions"]] == list(s.regions["region"])
    for want, got in zip(cxx["regions"], s.regions.to_dict("records")):
        for key in ("count", "tasks", "total", "exclusive"):
            assert got[key] == want[key], (key, want["name"])
    assert len(t.decisions) == len(cxx["decisions"])
    # The metric samples: the same values, per name, in the same order.
    for name, pts in cxx["metrics"].items():
        mine = t.samples[t.samples["metric"] == name]
        assert list(mine["time"]) == [p[1] for p in pts], name
        assert np.array_equal(mine["value"].to_numpy(), np.array([p[2] for p in pts])), name
    return t, s


def test_one_rank_summary_equals_the_cxx_aggregate(one_rank):
    t, s = check_summary_equals_cxx(one_rank["dir"])
    assert set(t.events["worker"]) >= {0, 1}
    assert s.regions["count"].sum() > 100


def test_two_rank_summary_equals_the_cxx_aggregate(two_ranks):
    t, s = check_summary_equals_cxx(two_ranks["dir"])
    assert list(s.ranks["rank"]) == [0, 1]
    assert (s.ranks["sent"] > 0).all() and (s.ranks["received"] > 0).all()


@pytest.mark.parametrize("run", ["one_rank", "two_ranks"])
def test_task_phases_equal_the_runtime_counter(run, request):
    r = request.getfixturevalue(run)
    counted = phases_printed(r["output"]) if run == "two_ranks" else None
    if counted is None:  # one rank: the final value in summary.json
        summary = ga.read_summary(r["summary"])
        counted = {0: int(summary.counter(
            "/threads{locality#0/total}/count/cumulative-phases"))}
    t = ga.read_trace(r["dir"])
    phases = t.tasks[~t.tasks["reentry"]].groupby("rank").size().to_dict()
    assert phases == counted
    assert t.summary().ranks.set_index("rank")["phases"].to_dict() == counted


def test_task_rows(one_rank):
    t = ga.read_trace(one_rank["dir"])
    tasks = t.tasks
    assert {"rank", "worker", "region", "guid", "parent", "begin", "end"} <= set(tasks.columns)
    assert (tasks["end"] >= tasks["begin"]).all()
    assert tasks["guid"].notna().all()
    # Every parent is a task of the trace, or the program's main (not a task).
    guids = set(tasks["guid"].dropna())
    parents = set(tasks["parent"].dropna()) - {0}
    assert len(parents - guids) <= 1
    # The same task on several rows: its phases (a suspension ends one, the resumption begins one).
    assert tasks["guid"].nunique() <= len(tasks)


def test_messages_pair_up(two_ranks):
    t = ga.read_trace(two_ranks["dir"])
    m = t.messages
    assert len(m) > 0
    assert m["send_time"].notna().all() and m["recv_time"].notna().all()
    assert (m["bytes"] == m["recv_bytes"]).all()
    assert (m["latency"] >= 0).all()
    assert set(m["sender"]) == {0, 1} and (m["sender"] != m["receiver"]).all()
    parcels = m[m["tag"] == 1]["parcels"]
    assert (parcels >= 1).all()
    s = t.summary().ranks.set_index("rank")
    assert len(m) == s["sent"].sum() == s["received"].sum()
    assert m["bytes"].sum() == s["sent_bytes"].sum()


def test_decisions_equal_the_run_summary(one_rank):
    t = ga.read_trace(one_rank["dir"])
    summary = ga.read_summary(one_rank["summary"])
    assert len(t.decisions) > 0
    assert len(t.decisions) == len(summary.decisions)
    for a, b in zip(t.decisions.to_dict("records"), summary.decisions.to_dict("records")):
        assert (a["rule"], a["knob"], a["old"], a["new"], a["reason"]) == \
               (b["rule"], b["knob"], b["old"], b["new"], b["reason"])
    knob = t.knob("stencil.nx")
    assert knob.iloc[0] == 1000 and knob.iloc[-1] == t.decisions["new"].iloc[-1]


def test_counters_as_time_series(one_rank):
    t = ga.read_trace(one_rank["dir"])
    idle = t.timeseries("/threads/idle-rate")
    assert list(idle.columns) == [(0, "locality#0/total")]
    assert idle.index.is_monotonic_increasing and idle.notna().all().all()
    assert ((idle >= 0) & (idle <= 1)).all().all()
    c = t.counters
    assert set(c["counter"]) >= {"idle-rate", "iteration-time"}
    assert (c[c["counter"] == "idle-rate"]["locality"] == 0).all()
    with pytest.raises(KeyError, match="no counter matches"):
        t.timeseries("/no/such")


def test_counter_csv_and_summary_json(one_rank):
    csv = ga.read_counters_csv(one_rank["csv"])
    workers = csv[csv["name"] == "idle-rate"]
    assert set(workers["worker"]) == {0, 1} and set(workers["pool"]) == {"default"}
    phases = csv[csv["name"] == "count/cumulative-phases"]
    assert phases["time_s"].is_monotonic_increasing and len(phases) >= 2
    summary = ga.read_summary(one_rank["summary"])
    assert phases["value"].iloc[-1] == summary.counter(
        "/threads{locality#0/total}/count/cumulative-phases")
    assert summary.knobs["stencil.nx"] == summary.decisions["new"].iloc[-1]
    wide = ga.counters_wide(csv)
    assert "/threads{locality#0/total}/count/cumulative-phases" in wide.columns
    with open(one_rank["summary"]) as f:
        assert summary.wall_time_s == json.load(f)["wall_time_s"]


def test_dataframe_types(one_rank):
    t = ga.read_trace(one_rank["dir"])
    e = t.events
    assert isinstance(e["region"].dtype, pd.CategoricalDtype)
    assert str(e["guid"].dtype) == "UInt64"
    idle = e[e["region"] == "Idle"]
    assert idle["guid"].isna().all() and len(idle) > 0


def test_steps_and_decision_effects(one_rank):
    t = ga.read_trace(one_rank["dir"])
    steps = ga.step_times(t, "/app/iteration-time", knob="stencil.nx")
    assert len(steps) >= 2 and (steps["duration"] > 0).all()
    assert (steps["start"] <= steps["end"]).all()
    assert set(steps["stencil.nx"]) <= set(t.knob("stencil.nx"))
    e = ga.decision_effects(t, "/app/iteration-time")
    assert len(e) == len(t.decisions)
    assert {"before", "after", "change"} <= set(e.columns)
    assert e["samples_before"].sum() + e["samples_after"].sum() >= 1
    empty = ga.decision_effects(t, "/app/iteration-time", rank=7)
    assert empty.empty and "change" in empty.columns


def grain_trace_summary(trace_dir, reader):
    from conftest import SRC
    import subprocess
    env = dict(os.environ, GRAIN_TRACE_READER=reader)
    return subprocess.run([os.path.join(SRC, "scripts", "grain-trace"), "summary", trace_dir],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                          check=True).stdout


@pytest.mark.parametrize("run", ["one_rank", "two_ranks"])
def test_numbers_equal_grain_trace_summary(run, request):
    """The package's tables against the text `grain-trace summary` prints, read with the
    python3-otf2 reader (the script's own pass, not this package's)."""
    from conftest import binary  # noqa: F401  (the build must be there)
    d = request.getfixturevalue(run)["dir"]
    text = grain_trace_summary(d, "python")
    s = ga.read_trace(d).summary()
    sections = text.split("\nPer ")
    regions = next(x for x in sections if x.startswith("region"))
    for r in s.regions.itertuples():
        if r.region.startswith("policy:"):
            continue
        tasks = str(r.tasks) if r.tasks else "-"
        row = re.search(r"^  %s\s+(\d+)\s+(\S+)\s" % re.escape(r.region), regions, re.M)
        assert row, r.region
        assert (int(row.group(1)), row.group(2)) == (r.count, tasks), r.region
    if len(s.ranks) > 1:
        ranks = next(x for x in sections if x.startswith("rank"))
        for r in s.ranks.itertuples():
            row = re.search(r"^  %d\s+(\d+)\s.*?\s(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$"
                            % r.rank, ranks, re.M)
            assert row, r.rank
            assert tuple(int(g) for g in row.groups()) == (
                r.workers, r.phases, r.sent, r.received, r.sent_bytes, r.received_bytes)
    decisions = re.search(r"^Decisions \((\d+)\)", text, re.M)
    assert int(decisions.group(1)) == len(s.decisions)
