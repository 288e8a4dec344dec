"""A run's other outputs: the summary (--grain:summary=FILE.json, docs/summary-schema.json)
and the counter CSV (--grain:print-counter-format=csv, docs/counters.md)."""
import csv
import json

import numpy as np
import pandas as pd

from .names import instance_parts, split_name


def _name_columns(df, column):
    """object, instance, counter, locality, pool, worker from the full names in `column`."""
    names = pd.unique(df[column])
    parts = {n: split_name(n) for n in names}
    inst = {n: instance_parts(parts[n][1]) for n in names}
    df["object"] = df[column].map(lambda n: parts[n][0] or "")
    df["instance"] = df[column].map(lambda n: parts[n][1] or "")
    df["name"] = df[column].map(lambda n: parts[n][2])
    df["locality"] = df[column].map(lambda n: inst[n].get("locality", -1)).astype(np.int64)
    df["pool"] = df[column].map(lambda n: str(inst[n].get("pool", "")))
    df["worker"] = df[column].map(lambda n: inst[n].get("worker", -1)).astype(np.int64)
    return df


class RunSummary:
    """A summary.json: counters (DataFrame: counter, value, object, instance, name, locality,
    pool, worker; value NaN where unavailable), knobs (Series: final values), decisions
    (DataFrame: time (s since start), rule, knob, old, new, requested, clamped, reason,
    trigger), and the run's facts in `info` (wall_time_s, workers, application, host,
    start_time, command_line, grain_version)."""

    def __init__(self, doc, path=None):
        self.path = path
        self.doc = doc
        self.info = {k: v for k, v in doc.items() if k not in ("counters", "knobs", "decisions")}
        self.wall_time_s = doc.get("wall_time_s")
        c = pd.DataFrame({"counter": list(doc.get("counters", {}).keys()),
                          "value": pd.to_numeric(pd.Series(list(doc.get("counters", {})
                                                                .values()), dtype=object),
                                                 errors="coerce")})
        self.counters = _name_columns(c, "counter")
        self.knobs = pd.Series(doc.get("knobs", {}), dtype=object, name="knob")
        self.decisions = pd.DataFrame(doc.get("decisions", []),
                                      columns=["time", "rule", "knob", "old", "new", "requested",
                                               "clamped", "reason", "trigger"])

    def counter(self, name):
        """The final value of one counter (full name), NaN when unavailable."""
        hit = self.counters[self.counters["counter"] == name]
        if hit.empty:
            raise KeyError("no counter %s in %s" % (name, self.path or "the summary"))
        return float(hit["value"].iloc[0])


def read_summary(path):
    """Reads a run summary written by --grain:summary=FILE.json."""
    with open(path) as f:
        try:
            doc = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError("%s is not a JSON document: %s" % (path, e)) from None
    if not isinstance(doc, dict) or "counters" not in doc:
        raise ValueError("%s is not a grain run summary (no \"counters\")" % path)
    return RunSummary(doc, path)


def read_counters_csv(path):
    """Reads counter values printed with --grain:print-counter-format=csv (time_s, counter,
    value; an empty value means unavailable: NaN) into a long DataFrame with the name's parts
    as columns (object, instance, name, locality, pool, worker). Several runs' lines (a header
    each) may follow each other; lines of other output are refused with their number."""
    times, names, values = [], [], []
    with open(path, newline="") as f:
        for n, row in enumerate(csv.reader(f), 1):
            if not row or row == ["time_s", "counter", "value"]:
                continue
            if len(row) != 3:
                raise ValueError("%s:%d: not a counter line (time_s,counter,value): %s"
                                 % (path, n, ",".join(row)))
            try:
                times.append(float(row[0]))
                values.append(float(row[2]) if row[2] != "" else np.nan)
            except ValueError:
                raise ValueError("%s:%d: not a number in %s" % (path, n, ",".join(row))) from None
            names.append(row[1])
    df = pd.DataFrame({"time_s": np.array(times, dtype=float), "counter": names,
                       "value": np.array(values, dtype=float)})
    return _name_columns(df, "counter")


def counters_wide(df):
    """A long counter table (read_counters_csv) as one column per counter, indexed by time_s."""
    return df.pivot_table(index="time_s", columns="counter", values="value", aggfunc="last")
