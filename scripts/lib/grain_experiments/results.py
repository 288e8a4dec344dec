"""Where results go and how they are read back: the out/ folder, CSV, JSON, run summaries,
and tables written into a page of docs/ between two markers.

Results go to out/NAME in the repository (ignored by git) unless --out names a folder: a
sweep never leaves files in the source tree.
"""

import csv
import json
from pathlib import Path

from .build import ROOT


def out_dir(out, name, create=True):
    """The folder for a driver's files: `out` when given, else out/NAME in the repository."""
    d = Path(out) if out else ROOT / "out" / name
    if create:
        d.mkdir(parents=True, exist_ok=True)
    return d


def add_out_option(parser, name):
    """--out DIR on an argparse parser: where the driver's files go (default out/NAME)."""
    parser.add_argument("--out", metavar="DIR", default=None,
                        help=f"folder for the results: runs.csv, provenance.json, ... "
                             f"(default out/{name} in the repository)")


def save_runs(out, name, rows, info, fields=None):
    """Every run's row to OUT/runs.csv and the provenance to OUT/provenance.json (OUT: `out`,
    else out/NAME); returns the CSV's path."""
    d = out_dir(out, name)
    write_json(d / "provenance.json", info)
    return write_csv(d / "runs.csv", rows, fields)


def write_csv(path, rows, fields=None):
    """Rows (dicts) to a CSV file with a header; None is written as an empty cell. The
    fields default to the keys of the rows, in the order first seen."""
    if fields is None:
        fields = []
        for r in rows:
            fields += [k for k in r if k not in fields]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in fields})
    return path


def _number(text):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def read_csv(path, strings=()):
    """The rows of a CSV file as dicts: empty cells are None, numbers are int or float
    (except in the columns named in `strings`), the rest strings."""
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            rows.append({k: (None if v == "" else v if k in strings else _number(v))
                         for k, v in r.items()})
    return rows


def write_json(path, data):
    Path(path).write_text(json.dumps(data, indent=1) + "\n")
    return path


def read_summary(path):
    """A run summary (--grain:summary=FILE): its dict, with "counters" and "knobs". Raises
    ValueError naming the file when it is missing or not a summary."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as e:
        raise ValueError(f"no run summary {path}: {e.strerror}") from None
    except ValueError as e:
        raise ValueError(f"{path} is not JSON: {e}") from None
    if not isinstance(data, dict) or "counters" not in data:
        raise ValueError(f"{path} is not a run summary (no \"counters\")")
    return data


def write_between_markers(path, begin, end, text):
    """Replace what lies between the lines `begin` and `end` of a page with `text`. Raises
    ValueError when the page lacks the markers (nothing is written then)."""
    path = Path(path)
    doc = path.read_text()
    if begin not in doc or end not in doc:
        raise ValueError(f"{path} has no {begin} ... {end} markers")
    head, rest = doc.split(begin, 1)
    tail = rest.split(end, 1)[1]
    path.write_text(head + begin + "\n" + text.rstrip("\n") + "\n" + end + tail)
    return path
