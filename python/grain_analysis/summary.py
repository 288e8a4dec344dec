"""The numbers of `grain-trace summary`, computed from a Trace's columns with pandas.

The rules are grain-trace-read's (instrumentation/tool/trace_state.cpp), which the tests check
against: a location is busy while a region other than Idle is open at its outermost level and
idle while Idle is; overhead is the rest of its span (first to last event); a region's count is
its Enter events without re-entries of inline parents, tasks its distinct GUIDs, total its
inclusive time, exclusive the time without nested regions."""
import numpy as np
import pandas as pd


class Summary:
    """locations, ranks, regions, decisions: DataFrames (times in ticks, see Trace)."""

    def __init__(self, locations, ranks, regions, decisions):
        self.locations = locations
        self.ranks = ranks
        self.regions = regions
        self.decisions = decisions


def _per(codes, values, n, dtype=np.int64):
    """Sums of values grouped by codes 0..n-1 (exact for integers)."""
    out = np.zeros(n, dtype=dtype)
    if len(codes):
        s = pd.Series(values).groupby(codes).sum()
        out[s.index.to_numpy()] = s.to_numpy()
    return out


def summarise(trace):
    raw = trace._raw
    ev = raw.tables["events"]
    regions = list(raw.header["regions"])
    nreg, nloc = len(regions), len(trace.locations)
    li = ev["location"].astype(np.int64)
    rc = ev["region"].astype(np.int64)
    dur = ev["end"].astype(np.int64) - ev["begin"].astype(np.int64)
    outer = ev["outer"]
    first_level = outer < 0
    is_idle = np.array([r.lower() == "idle" for r in regions], dtype=bool)
    is_task = np.array([r.startswith("task:") for r in regions], dtype=bool)
    row_idle = is_idle[rc] if nreg else np.zeros(0, dtype=bool)
    new_phase = (ev["flags"] & 1) == 0

    # Per region.
    nested = ~first_level
    child_region = rc[outer[nested]]  # the region of each nested interval's enclosing one
    total = _per(rc, dur, nreg)
    exclusive = total - _per(child_region, dur[nested], nreg)
    count = np.bincount(rc[new_phase], minlength=nreg)
    with_guid = new_phase & ((ev["flags"] & 2) != 0)
    tasks = np.zeros(nreg, dtype=np.int64)
    if with_guid.any():
        u = pd.DataFrame({"r": rc[with_guid], "g": ev["guid"][with_guid]}).groupby("r")["g"]
        u = u.nunique()
        tasks[u.index.to_numpy()] = u.to_numpy()
    reg = pd.DataFrame({"region": regions, "count": count, "tasks": tasks, "total": total,
                        "exclusive": exclusive})
    reg["mean"] = reg["total"] / reg["count"].where(reg["count"] > 0)

    # Per location.
    locs = trace.locations.copy()
    locs["busy"] = _per(li[first_level & ~row_idle], dur[first_level & ~row_idle], nloc)
    locs["idle"] = _per(li[first_level & row_idle], dur[first_level & row_idle], nloc)
    phase = new_phase & (is_task[rc] if nreg else np.zeros(0, dtype=bool))
    locs["phases"] = np.bincount(li[phase], minlength=nloc)
    m = raw.tables["messages"]
    ml = m["location"].astype(np.int64)
    sent = m["sent"] != 0
    mb = m["bytes"].astype(np.int64)
    locs["sent"] = np.bincount(ml[sent], minlength=nloc)
    locs["received"] = np.bincount(ml[~sent], minlength=nloc)
    locs["sent_bytes"] = _per(ml[sent], mb[sent], nloc)
    locs["received_bytes"] = _per(ml[~sent], mb[~sent], nloc)
    first = locs["first"].astype("Int64")
    last = locs["last"].astype("Int64")
    locs["span"] = (last - first).fillna(0).astype(np.int64)
    locs["overhead"] = (locs["span"] - locs["busy"] - locs["idle"]).clip(lower=0)
    locs["busy_pct"] = np.where(locs["span"] > 0, 100.0 * locs["busy"] /
                                locs["span"].where(locs["span"] > 0, 1), 0.0)

    # Per rank: the workers are the locations with busy or idle time.
    ranks = []
    for rank, g in locs.groupby("rank", sort=True):
        w = g[(g["busy"] > 0) | (g["idle"] > 0)]
        span = int((w["last"].astype(np.int64) - w["first"].astype(np.int64)).sum()) \
            if len(w) else 0
        busy = int(w["busy"].sum())
        ranks.append({"rank": int(rank), "workers": len(w), "busy": busy,
                      "idle": int(w["idle"].sum()),
                      "busy_pct": 100.0 * busy / span if span else 0.0,
                      "phases": int(g["phases"].sum()), "sent": int(g["sent"].sum()),
                      "received": int(g["received"].sum()),
                      "sent_bytes": int(g["sent_bytes"].sum()),
                      "received_bytes": int(g["received_bytes"].sum())})
    ranks = pd.DataFrame(ranks, columns=["rank", "workers", "busy", "idle", "busy_pct", "phases",
                                         "sent", "received", "sent_bytes", "received_bytes"])
    return Summary(locs, ranks, reg, trace.decisions)


def aggregate(trace, metrics=True):
    """The document grain-trace-read prints without --columns (its JSON aggregate), built from
    the columns: what scripts/grain-trace's commands read."""
    s = summarise(trace)
    h = trace._raw.header
    locations = []
    for r in s.locations.itertuples(index=False):
        seen = r.first is not None and not pd.isna(r.first)
        locations.append({"ref": int(r.ref), "name": r.name, "type": r.type,
                          "events": int(r.events), "first": int(r.first) if seen else None,
                          "last": int(r.last) if seen else None, "busy": int(r.busy),
                          "idle": int(r.idle), "phases": int(r.phases), "sent": int(r.sent),
                          "received": int(r.received), "sent_bytes": int(r.sent_bytes),
                          "received_bytes": int(r.received_bytes)})
    regions = [{"name": r.region, "count": int(r.count), "tasks": int(r.tasks),
                "total": int(r.total), "exclusive": int(r.exclusive)}
               for r in s.regions.itertuples(index=False)]
    out = {"resolution": h["resolution"], "offset": h["offset"], "length": h["length"],
           "command": h.get("command", ""), "start_time": h.get("start_time", ""),
           "locations": locations, "regions": regions, "decisions": h["decisions"],
           "units": h.get("units", {}), "metrics": {}}
    if metrics:
        sm = trace._raw.tables["samples"]
        names = h["metrics"]
        codes = sm["metric"]
        loc, t, v = sm["location"].tolist(), sm["time"].tolist(), sm["value"].tolist()
        for i, c in enumerate(codes.tolist()):
            out["metrics"].setdefault(names[c], []).append([loc[i], t[i], v[i]])
    return out
