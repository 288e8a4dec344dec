"""Medians and spreads: what every table and figure of a measurement reports.

Missing values (None: a counter not compiled in, a failed run) are left out, and an empty
list gives None rather than an exception, so that a table can print "-" for it.
"""

import statistics


def _values(values):
    return [v for v in values if v is not None and v != ""]


def median(values):
    """The median of the values that are there, None when none is."""
    v = _values(values)
    return statistics.median(v) if v else None


def spread(values):
    """(min, max) of the values that are there, (None, None) when none is."""
    v = _values(values)
    return (min(v), max(v)) if v else (None, None)


def iqr(values):
    """(first quartile, third quartile); with one value, that value twice."""
    v = sorted(_values(values))
    if not v:
        return (None, None)
    if len(v) == 1:
        return (v[0], v[0])
    q = statistics.quantiles(v, n=4, method="inclusive")
    return (q[0], q[2])


def describe(values):
    """{n, median, min, max, q1, q3} of the values: a cell of a results table."""
    v = _values(values)
    lo, hi = spread(v)
    q1, q3 = iqr(v)
    return {"n": len(v), "median": median(v), "min": lo, "max": hi, "q1": q1, "q3": q3}
