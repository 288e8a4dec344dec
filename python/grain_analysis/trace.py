"""A trace as pandas DataFrames: the region intervals (tasks, Idle, runtime and policy regions),
the counter and knob samples, the policy's decisions and the messages between ranks."""
import fnmatch
import re
from functools import cached_property

import numpy as np
import pandas as pd

from . import _reader
from .names import instance_parts, split_name

_WORKER = re.compile(r"^worker (\d+)$")


def read_trace(path, reader="auto"):
    """Reads an OTF2 archive (DIR/traces.otf2 or its directory DIR) into a Trace.

    reader: "auto" (grain-trace-read when found, else python3-otf2 with a warning), "python",
    or the path of a grain-trace-read executable. Raises TraceError for an archive that cannot
    be read."""
    return Trace(_reader.read_raw(path, reader), _reader.anchor_of(path))


def _categorical(codes, names):
    """A categorical of names[codes] (names may repeat: "worker 0" on every rank)."""
    uniq = pd.unique(pd.Series(names, dtype=object))
    pos = {n: i for i, n in enumerate(uniq)}
    remap = np.array([pos[n] for n in names], dtype=np.int64)
    return pd.Categorical.from_codes(remap[codes] if len(names) else codes, categories=uniq)


def _nullable(values, present):
    return pd.arrays.IntegerArray(values.astype(np.uint64), ~present)


class Trace:
    """Tables of one archive. Times (begin, end, time) are in the archive's ticks (grain: ns
    of CLOCK_MONOTONIC); `seconds` columns and Trace.seconds() count from the trace's start.

    Attributes: path, resolution (ticks per second), offset (the first tick), length (ticks),
    command (the traced command line, grain's archives), start_time (ISO 8601 UTC), locations."""

    def __init__(self, raw, path):
        h = raw.header
        self.path = path
        self.resolution = float(h["resolution"]) if h["resolution"] else 1e9
        self.offset = h["offset"]
        self.length = h["length"]
        self.command = h.get("command", "")
        self.start_time = h.get("start_time", "")
        self.units = dict(h.get("units", {}))
        self._raw = raw
        locs = pd.DataFrame(h["locations"], columns=["ref", "name", "type", "events", "first",
                                                     "last"])
        for col in ("first", "last"):  # <NA> for a location without events
            locs[col] = pd.array([loc[col] for loc in h["locations"]], dtype="Int64")
        locs.insert(1, "rank", (locs["ref"].astype(np.uint64) >> np.uint64(32)).astype(np.int64))
        locs.insert(3, "worker", [int(m.group(1)) if m else -1
                                  for m in (_WORKER.match(n or "") for n in locs["name"])])
        self.locations = locs

    def seconds(self, ticks):
        """Ticks (a number, array or Series) as seconds since the trace's start."""
        return (ticks - self.offset) / self.resolution

    # ---- region intervals ------------------------------------------------------------------

    @cached_property
    def events(self):
        """One row per region interval (an Enter and its Leave) on every location, in Enter order.

        rank, worker (-1: not a worker), location (its name), region, guid and parent (the task's
        GUID and its parent's; <NA> where the Enter has none), begin, end, duration (ticks),
        reentry (an inline parent entered again when its child resumed: not a new phase),
        outer (row of the enclosing interval, -1 at the outermost level), location_index."""
        ev = self._raw.tables["events"]
        li = ev["location"].astype(np.int64)
        locs = self.locations
        begin = ev["begin"].astype(np.int64)
        end = ev["end"].astype(np.int64)
        flags = ev["flags"]
        return pd.DataFrame({
            "rank": locs["rank"].to_numpy()[li],
            "worker": locs["worker"].to_numpy()[li],
            "location": _categorical(li, list(locs["name"])),
            "region": pd.Categorical.from_codes(ev["region"].astype(np.int64),
                                                categories=self._raw.header["regions"]),
            "guid": _nullable(ev["guid"], (flags & 2) != 0),
            "parent": _nullable(ev["parent"], (flags & 4) != 0),
            "begin": begin,
            "end": end,
            "duration": end - begin,
            "reentry": (flags & 1) != 0,
            "outer": ev["outer"].astype(np.int64),
            "location_index": li,
        })

    @cached_property
    def tasks(self):
        """The task phases: events of task:<name> regions (re-entries of inline parents
        included, reentry=True)."""
        e = self.events
        t = e[e["region"].str.startswith("task:").to_numpy(dtype=bool)].copy()
        # Only the task kinds (a groupby on region then lists no Idle or policy rows).
        t["region"] = t["region"].cat.remove_unused_categories()
        return t

    # ---- counters and knobs ----------------------------------------------------------------

    @cached_property
    def samples(self):
        """Every metric sample: time, seconds, rank, location, metric (full name), object,
        instance, counter (the last part of the name), value. Knobs are metrics knob:NAME."""
        s = self._raw.tables["samples"]
        names = list(self._raw.header["metrics"])
        parts = [split_name(n) for n in names]
        codes = s["metric"].astype(np.int64)
        li = s["location"].astype(np.int64)
        t = s["time"].astype(np.int64)

        def cat(i):
            return _categorical(codes, [p[i] if p[i] is not None else "" for p in parts])
        return pd.DataFrame({
            "time": t,
            "seconds": self.seconds(t),
            "rank": self.locations["rank"].to_numpy()[li],
            "location": _categorical(li, list(self.locations["name"])),
            "metric": pd.Categorical.from_codes(codes, categories=names),
            "object": cat(0),
            "instance": cat(1),
            "counter": cat(2),
            "value": s["value"],
        })

    @cached_property
    def counters(self):
        """The counter samples (samples without the knobs), with the instance's parts as
        columns: locality, pool, worker (-1 / "" where the instance has none)."""
        s = self.samples
        c = s[(s["object"] != "knob").to_numpy(dtype=bool)].reset_index(drop=True)
        inst = {i: instance_parts(i) for i in c["instance"].cat.categories}
        c["locality"] = c["instance"].map(lambda i: inst[i].get("locality", -1)).astype(np.int64)
        c["pool"] = c["instance"].map(lambda i: str(inst[i].get("pool", ""))).astype("category")
        c["worker"] = c["instance"].map(lambda i: inst[i].get("worker", -1)).astype(np.int64)
        return c

    @cached_property
    def knobs(self):
        """Knob values over time: time, seconds, rank, knob, value (the start value, then each
        decision's)."""
        s = self.samples
        k = s[(s["object"] == "knob").to_numpy(dtype=bool)]
        return pd.DataFrame({"time": k["time"], "seconds": k["seconds"], "rank": k["rank"],
                             "knob": k["counter"].astype(str), "value": k["value"]}
                            ).reset_index(drop=True)

    def timeseries(self, pattern, by=("rank", "instance")):
        """The counters matching PATTERN as a wide table: index seconds, one column per
        (rank, instance) (or per `by`). PATTERN: a full name or `*` pattern
        ("/threads{locality#0/total}/idle-rate", "/threads{*}/idle-rate"), or
        "/object/counter" for every instance of it. Raises KeyError when nothing matches."""
        c = self.samples
        names = [n for n in c["metric"].cat.categories if _matches(n, pattern)]
        if not names:
            raise KeyError("no counter matches %s" % pattern)
        sel = c[c["metric"].isin(names).to_numpy(dtype=bool)]
        by = list(by) if not isinstance(by, str) else [by]
        wide = sel.pivot_table(index="seconds", columns=by, values="value", aggfunc="last",
                               observed=True)
        return wide.sort_index()

    def knob(self, name):
        """One knob's values as a Series indexed by seconds (a step curve: each value holds
        until the next)."""
        k = self.knobs
        k = k[k["knob"] == name]
        if k.empty:
            raise KeyError("no knob %s (knobs: %s)" % (name, ", ".join(sorted(set(self.knobs
                                                                                  ["knob"])))))
        return pd.Series(k["value"].to_numpy(), index=k["seconds"].to_numpy(), name=name)

    # ---- decisions and messages ------------------------------------------------------------

    @cached_property
    def decisions(self):
        """Every decision: time, seconds, rank, rule, knob, old, new, requested, clamped,
        reason, trigger (counter -> value that triggered it)."""
        rows = []
        ranks = self.locations["rank"].to_numpy()
        for e in self._raw.header["decisions"]:
            a, p = e["attributes"], e["parameters"]
            old, new = a.get("old_value"), a.get("new_value")
            rows.append({
                "time": e["time"], "seconds": self.seconds(e["time"]),
                "rank": int(ranks[e["location"]]) if "location" in e else 0,
                "rule": a.get("rule", e["rule"]),
                "knob": a.get("knob", "") or p.get("knob", ""),
                "old": old if old is not None else p.get("old_value"),
                "new": new if new is not None else p.get("new_value"),
                "requested": a.get("requested"),
                "clamped": bool(a.get("clamped", 0)),
                "reason": a.get("reason", "") or p.get("reason", ""),
                "trigger": {k[8:]: v for k, v in a.items() if k.startswith("trigger:")}})
        return pd.DataFrame(rows, columns=["time", "seconds", "rank", "rule", "knob", "old",
                                           "new", "requested", "clamped", "reason", "trigger"])

    @cached_property
    def message_records(self):
        """The MpiSend and MpiRecv records as written: time, rank, sent (True: a send),
        peer (the receiver of a send, the sender of a receive), tag, bytes, parcels (sends:
        parcels packed in the message; -1 unknown)."""
        m = self._raw.tables["messages"]
        li = m["location"].astype(np.int64)
        return pd.DataFrame({"time": m["time"].astype(np.int64),
                             "rank": self.locations["rank"].to_numpy()[li],
                             "sent": m["sent"] != 0, "peer": m["peer"].astype(np.int64),
                             "tag": m["tag"].astype(np.int64),
                             "bytes": m["bytes"].astype(np.int64),
                             "parcels": m["parcels"]})

    @cached_property
    def messages(self):
        """Messages as send/receive pairs: sender, receiver, tag, send_time, recv_time (ticks;
        NaN where the other half is missing), latency (s), bytes, parcels. Pairs are matched as
        MPI matches them: the n-th send from A to B with tag T is the n-th such receive."""
        r = self.message_records
        s = r[r["sent"]].rename(columns={"rank": "sender", "peer": "receiver",
                                         "time": "send_time"})
        v = r[~r["sent"]].rename(columns={"rank": "receiver", "peer": "sender",
                                          "time": "recv_time", "bytes": "recv_bytes"})
        key = ["sender", "receiver", "tag"]
        s = s.assign(seq=s.groupby(key).cumcount())
        v = v.assign(seq=v.groupby(key).cumcount())
        pairs = s[key + ["seq", "send_time", "bytes", "parcels"]].merge(
            v[key + ["seq", "recv_time", "recv_bytes"]], on=key + ["seq"], how="outer")
        pairs = pairs.sort_values(["send_time", "recv_time"]).reset_index(drop=True)
        pairs["latency"] = (pairs["recv_time"] - pairs["send_time"]) / self.resolution
        return pairs[key + ["send_time", "recv_time", "latency", "bytes", "recv_bytes",
                            "parcels"]]

    def summary(self):
        """The tables of `grain-trace summary` (see summary.py)."""
        from .summary import summarise
        return summarise(self)


def _matches(name, pattern):
    if name == pattern or fnmatch.fnmatchcase(name, pattern):
        return True
    obj, _, counter = split_name(name)
    return obj is not None and "/%s/%s" % (obj, counter) == pattern
