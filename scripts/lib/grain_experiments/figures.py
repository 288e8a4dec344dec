"""One style for every figure: a title saying what was run, axis names with units, the
spread of the runs drawn around each median, and a footer with the machine, the commit and
the date (provenance.footer).

    plt = pyplot()                     # None (with a note) when matplotlib is missing
    fig, ax = subplots(plt)
    errorbars(ax, x, medians, lows, highs, label="2 workers (median, min-max)")
    ax.set_xlabel("partition size nx (points per task)"); ax.set_ylabel("time (s)")
    finish(plt, fig, out / "time.png", "Execution time vs. partition size", info)
"""

import sys
import textwrap

from .provenance import footer


def pyplot(name="scripts"):
    """matplotlib.pyplot with the file backend, or None after a note when it is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"{name}: python3-matplotlib is missing, no figures (scripts/setup installs it)",
              file=sys.stderr)
        return None
    return plt


def subplots(plt, ncols=1, nrows=1, width=6.5, height=4.6):
    """A figure of nrows x ncols panels, each width x height inches; axes as a flat list
    when there are several, the one axes otherwise."""
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows),
                             squeeze=False)
    flat = [a for row in axes for a in row]
    for a in flat:
        a.grid(True, which="both", alpha=0.3)
    return fig, (flat if len(flat) > 1 else flat[0])


def errorbars(ax, x, y, lo=None, hi=None, fmt="o-", **kw):
    """Medians `y` with bars from `lo` to `hi` (the runs' spread: min-max or quartiles);
    without a spread, the line alone. Points whose y is None are left out."""
    pts = [i for i, v in enumerate(y) if v is not None]
    xs = [x[i] for i in pts]
    ys = [y[i] for i in pts]
    if lo is not None and hi is not None and all(lo[i] is not None and hi[i] is not None
                                                 for i in pts):
        err = [[ys[k] - lo[i] for k, i in enumerate(pts)],
               [hi[i] - ys[k] for k, i in enumerate(pts)]]
        return ax.errorbar(xs, ys, yerr=err, fmt=fmt, capsize=3, **kw)[0]
    return ax.plot(xs, ys, fmt, **kw)[0]


def finish(plt, fig, path, title, info=None, stamp=None, legend=True):
    """Title the figure, put the provenance footer (or `stamp`) at its foot, a legend on
    every panel that has labelled lines, save it as `path` and close it. Returns path."""
    for ax in fig.axes:
        if legend and ax.get_legend_handles_labels()[0] and ax.get_legend() is None:
            ax.legend(fontsize=7)
    width = fig.get_figwidth()  # inches: about 11 title characters, 17 footer ones each
    fig.suptitle("\n".join(textwrap.fill(line, int(width * 11))
                           for line in title.split("\n")), fontsize=11)
    text = footer(info) if stamp is None else stamp
    text = textwrap.fill(text, int(width * 17)) if text else ""
    lines = text.count("\n") + 1 if text else 0
    fig.tight_layout(rect=(0, 0.035 * lines / (fig.get_figheight() / 4.6), 1, 1))
    if text:
        fig.text(0.01, 0.01, text, fontsize=7, color="0.35", ha="left", va="bottom")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
