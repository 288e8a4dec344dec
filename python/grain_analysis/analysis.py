"""Questions asked of most runs: what did each decision change, and how do two runs differ."""
import numpy as np
import pandas as pd


def step_times(trace, metric="/app/iteration-time", knob=None, rank=0):
    """The steps a duration counter (unit ns, e.g. grain-stencil's /app/iteration-time: the
    last step's time) saw, one row each: end (the first sample showing it, s since the trace's
    start), duration (s), start (end - duration), and with KNOB the knob's value at the step's
    start, the value the step ran under. The sampler repeats a value until the next step ends:
    each new value is one step (two steps of exactly equal nanoseconds count once)."""
    series = trace.timeseries(metric, by="rank")
    s = series[rank] if rank in series.columns else series.iloc[:, 0]
    s = s.dropna()
    s = s[s.ne(s.shift())]
    out = pd.DataFrame({"end": s.index.to_numpy(), "duration": s.to_numpy() / 1e9})
    out["start"] = out["end"] - out["duration"]
    if knob is not None:
        k = trace.knob(knob)
        pos = np.searchsorted(k.index.to_numpy(), out["start"].to_numpy(), side="right") - 1
        out[knob] = k.to_numpy()[np.clip(pos, 0, None)]
    return out


def decision_effects(trace, metric, rank=None):
    """For each decision (in time order), the mean of METRIC under the value before it and under
    the value it set (until the next decision replaced it), and the relative change
    (after / before - 1). A duration counter (unit ns, such as a step time) counts each step once,
    under the value in effect when the step started (step_times); other counters by their
    sample times. METRIC: a counter name or pattern matching one series per rank."""
    d = trace.decisions
    if rank is not None:
        d = d[d["rank"] == rank]
    d = d.sort_values("time").reset_index(drop=True)
    series = trace.timeseries(metric, by="rank")
    names = set(trace.samples["metric"][trace.samples["metric"].isin(
        [n for n in trace.samples["metric"].cat.categories if n == metric or
         _same_counter(n, metric)])].astype(str))
    durations = bool(names) and all(trace.units.get(n) == "ns" for n in names)
    out = []
    times = d["seconds"].tolist() + [np.inf]
    for i, row in d.iterrows():
        if durations:
            st = step_times(trace, metric, rank=row["rank"])
            s = pd.Series(st["duration"].to_numpy() * 1e9, index=st["start"].to_numpy())
        else:
            s = series[row["rank"]] if row["rank"] in series.columns else series.iloc[:, 0]
            s = s.dropna()
        lo = times[i - 1] if i > 0 else -np.inf
        before = s[(s.index > lo) & (s.index <= times[i])]
        after = s[(s.index > times[i]) & (s.index <= times[i + 1])]
        b = before.mean() if len(before) else np.nan
        a = after.mean() if len(after) else np.nan
        out.append({"before": b, "after": a, "samples_before": len(before),
                    "samples_after": len(after),
                    "change": a / b - 1 if b and not np.isnan(a) else np.nan})
    cols = ["before", "after", "samples_before", "samples_after", "change"]
    return pd.concat([d[["seconds", "rank", "rule", "knob", "old", "new", "reason"]],
                      pd.DataFrame(out, index=d.index, columns=cols)], axis=1)


def _same_counter(name, pattern):
    from .trace import _matches
    return _matches(name, pattern)


def decision_that_mattered(trace, metric, goal="min"):
    """The decision whose value moved METRIC the most in the direction of GOAL ("min": the
    largest fall, "max": the largest rise), as a row of decision_effects; None when no
    decision has samples on both sides."""
    e = decision_effects(trace, metric).dropna(subset=["change"])
    if e.empty:
        return None
    return e.loc[e["change"].idxmin() if goal == "min" else e["change"].idxmax()]


def compare(a, b, counters=None, labels=("a", "b")):
    """Two run summaries (read_summary) side by side: one row per counter present in both
    (or the names in COUNTERS), the two values and b / a."""
    ca = a.counters.set_index("counter")["value"]
    cb = b.counters.set_index("counter")["value"]
    names = list(counters) if counters is not None else [n for n in ca.index if n in cb.index]
    out = pd.DataFrame({labels[0]: ca.reindex(names), labels[1]: cb.reindex(names)})
    wall = pd.DataFrame({labels[0]: [a.wall_time_s], labels[1]: [b.wall_time_s]},
                        index=["wall_time_s"])
    out = pd.concat([wall, out])
    out["ratio"] = out[labels[1]] / out[labels[0]].where(out[labels[0]] != 0)
    out.index.name = "counter"
    return out
