"""Questions asked of most runs: what did each decision change, and how do two runs differ."""
import numpy as np
import pandas as pd


def decision_effects(trace, metric, rank=None):
    """For each decision (in time order), the mean of METRIC (a counter name or pattern that
    matches one series per rank, e.g. "/app/iteration-time") from the previous decision to this
    one (before) and from this one to the next (after), and the relative change
    (after / before - 1). A decision's effect is what the run did under the value it set, until
    the next decision replaced it."""
    d = trace.decisions
    if rank is not None:
        d = d[d["rank"] == rank]
    d = d.sort_values("time").reset_index(drop=True)
    series = trace.timeseries(metric, by="rank")
    out = []
    times = d["seconds"].tolist() + [np.inf]
    for i, row in d.iterrows():
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
    return pd.concat([d[["seconds", "rank", "rule", "knob", "old", "new", "reason"]],
                      pd.DataFrame(out, index=d.index)], axis=1)


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
