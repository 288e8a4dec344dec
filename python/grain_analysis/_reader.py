"""Reading an OTF2 archive into columns: grain-trace-read --columns (C++, the OTF2 C API), or,
when it is not found, the python3-otf2 reader (_otf2_fallback), with a warning.

Both give a Raw: the header (clock, locations, regions, metric names and units, decisions) and
three tables of numpy columns: events (one row per region interval), samples (one row per
metric value) and messages (MpiSend/MpiRecv records)."""
import glob
import json
import os
import shutil
import subprocess
import tempfile
import warnings

import numpy as np

OTHER_FORMATS = ("trace.pftrace", "trace.json", "trace.json.gz")


class TraceError(Exception):
    """An archive that cannot be read (missing, another format, corrupt)."""


class Raw:
    def __init__(self, header, tables):
        self.header = header
        self.tables = tables


def anchor_of(path):
    """The OTF2 anchor file: PATH itself, or the one .otf2 file in the directory PATH."""
    path = os.fspath(path)
    if os.path.isdir(path):
        names = sorted(os.listdir(path))
        cands = [f for f in names if f.endswith(".otf2")]
        if not cands:
            other = [f for f in names if f in OTHER_FORMATS]
            if other:
                raise TraceError(_not_otf2(os.path.join(path, other[0])))
            raise TraceError("no .otf2 anchor file in %s" % path)
        return os.path.join(path, cands[0])
    if not os.path.exists(path):
        raise TraceError("%s does not exist" % path)
    if os.path.basename(path) in OTHER_FORMATS:
        raise TraceError(_not_otf2(path))
    return path


def _not_otf2(path):
    return ("%s is a Perfetto or Chrome JSON trace (--grain:trace-format=perfetto or chrome); "
            "grain's readers take OTF2 archives (the default format): open this one in "
            "https://ui.perfetto.dev" % path)


def find_reader():
    """The grain-trace-read executable, or None (then python3-otf2 reads, slowly).

    Looked for in order: $GRAIN_TRACE_READER ("python": none), the bin/ of the installation this
    package came with (cmake --install), build*/bin/ of the source tree this package sits in
    (build/ first), then PATH."""
    env = os.environ.get("GRAIN_TRACE_READER")
    if env:
        if env == "python":
            return None
        if not os.access(env, os.X_OK):
            raise TraceError("GRAIN_TRACE_READER=%s is not an executable" % env)
        return env
    try:
        from . import _install_paths  # written by cmake --install
        installed = os.path.join(_install_paths.BINDIR, "grain-trace-read")
        if os.access(installed, os.X_OK):
            return installed
    except ImportError:
        pass
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    cands = sorted(glob.glob(os.path.join(root, "build*", "bin", "grain-trace-read")),
                   key=lambda p: (os.path.basename(os.path.dirname(os.path.dirname(p)))
                                  != "build", p))
    cands = [c for c in cands if os.access(c, os.X_OK)]
    return cands[0] if cands else shutil.which("grain-trace-read")


def read_raw(path, reader="auto"):
    """Reads the archive at PATH (the anchor file or its directory) into a Raw.

    reader: "auto" (grain-trace-read when found, else python3-otf2 with a warning), "python",
    or the path of a grain-trace-read executable."""
    exe = find_reader() if reader == "auto" else (None if reader == "python" else reader)
    anchor = anchor_of(path)
    if exe is None:
        from . import _otf2_fallback
        if reader == "auto":
            warnings.warn("grain-trace-read not found (build grain, install it, or set "
                          "GRAIN_TRACE_READER): reading %s with python3-otf2, about 45x slower"
                          % anchor, RuntimeWarning, stacklevel=3)
        return _otf2_fallback.read(anchor)
    return _read_columns(exe, anchor)


def _read_columns(exe, anchor):
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen([exe, "--columns", anchor], stdout=subprocess.PIPE, stderr=err)
        try:
            line = p.stdout.readline()
            header = json.loads(line) if line else None
            buf = None
            if header is not None:
                # Read into numpy's own (aligned) memory, in one copy.
                buf = np.empty(header["bytes"], dtype=np.uint8)
                view = memoryview(buf)
                got = 0
                while got < len(buf):
                    n = p.stdout.readinto(view[got:])
                    if not n:
                        break
                    got += n
                if got != len(buf):
                    header = None
        finally:
            p.stdout.close()
            rc = p.wait()
        if rc != 0 or header is None:
            err.seek(0)
            why = err.read().decode(errors="replace").strip()
            why = why.replace("grain-trace-read: ", "", 1) or "grain-trace-read exited %d" % rc
            if "unknown argument --columns" in why:
                why = ("%s predates the columnar output (--columns): rebuild or reinstall grain, "
                       "or name a newer one with GRAIN_TRACE_READER" % exe)
            raise TraceError(why)
    tables = {}
    for name, t in header.pop("tables").items():
        rows = t["rows"]
        tables[name] = {c: (np.frombuffer(buf, dtype=np.dtype(dt), count=rows, offset=off)
                            if rows else np.empty(0, dtype=np.dtype(dt)))
                        for c, dt, off in t["columns"]}
    return Raw(header, tables)
