"""The python3-otf2 reader: the same Raw as grain-trace-read --columns (see _reader.py), by the
same rules (instrumentation/tool/trace_state.cpp), for machines without grain's C++ reader.
It builds a Python object per event, so it is about 45 times slower.

Debian's otf2 module imports only under /usr/bin/python3."""
import numpy as np

from ._reader import Raw, TraceError


def _attrs(event):
    out = {}
    if event.attributes:
        for a, v in event.attributes.items():
            out[a.name] = v.name if hasattr(v, "name") and not isinstance(v, (int, float)) else v
    return out


def _location_type(loc):
    return str(loc.type).split(".")[-1]


def read(anchor):
    try:
        import otf2
    except ImportError:
        raise TraceError("neither grain-trace-read (build grain, or set GRAIN_TRACE_READER) nor "
                         "the otf2 Python module (apt install python3-otf2; it imports only "
                         "under /usr/bin/python3) is available") from None
    try:
        return _read(otf2, anchor)
    except otf2.error.TraceReaderError as e:
        raise TraceError("%s: %s" % (anchor, e)) from None


def _read(otf2, anchor):
    ev_cols = {k: [] for k in ("location", "region", "begin", "end", "guid", "parent", "outer",
                               "flags")}
    msg_cols = {k: [] for k in ("location", "time", "sent", "peer", "tag", "bytes", "parcels")}
    smp_cols = {k: [] for k in ("metric", "location", "time", "value")}
    header = {"format": "grain-columns", "version": 1, "command": "", "start_time": ""}
    with otf2.reader.open(anchor) as tr:
        defs = tr.definitions
        clock = defs.clock_properties
        header["resolution"] = clock.timer_resolution
        header["offset"] = clock.global_offset
        header["length"] = clock.trace_length
        for name, value in _properties(tr):
            if name == "GRAIN::COMMAND_LINE":
                header["command"] = value
            elif name == "GRAIN::START_TIME":
                header["start_time"] = value
        locs, index = [], {}
        for loc in defs.locations:
            index[loc._ref] = len(locs)
            locs.append({"ref": loc._ref, "name": loc.name, "type": _location_type(loc),
                         "events": 0, "first": None, "last": None})
        header["locations"] = locs
        header["units"] = {m.name: m.unit or "" for m in defs.metric_members}
        regions, region_code = [], {}
        metrics, metric_code = [], {}
        decisions, pending = [], None
        open_rows = [[] for _ in locs]
        for location, ev in tr.events:
            li = index.get(location._ref)
            if li is None:
                continue
            L = locs[li]
            t = ev.time
            L["events"] += 1
            if L["first"] is None:
                L["first"] = t
            L["last"] = t
            if isinstance(ev, otf2.events.Enter):
                name = ev.region.name if ev.region is not None and ev.region.name is not None \
                    else "<region>"
                code = region_code.setdefault(name, len(regions))
                if code == len(regions):
                    regions.append(name)
                a = _attrs(ev) if ev.attributes else {}
                guid, parent = a.get("GUID"), a.get("Parent GUID")
                stack = open_rows[li]
                ev_cols["location"].append(li)
                ev_cols["region"].append(code)
                ev_cols["begin"].append(t)
                ev_cols["end"].append(t)
                ev_cols["guid"].append(guid if isinstance(guid, int) else 0)
                ev_cols["parent"].append(parent if isinstance(parent, int) else 0)
                ev_cols["outer"].append(stack[-1] if stack else -1)
                ev_cols["flags"].append((1 if "Resumed inline child" in a else 0) |
                                        (2 if isinstance(guid, int) else 0) |
                                        (4 if isinstance(parent, int) else 0))
                stack.append(len(ev_cols["begin"]) - 1)
                if name.startswith("policy:"):
                    pending = {"time": t, "location": li, "rule": name[7:], "attributes": a,
                               "parameters": {}}
                    decisions.append(pending)
            elif isinstance(ev, otf2.events.Leave):
                if open_rows[li]:
                    ev_cols["end"][open_rows[li].pop()] = t
                if ev.region is not None and (ev.region.name or "").startswith("policy:"):
                    pending = None
            elif isinstance(ev, (otf2.events.MpiSend, otf2.events.MpiRecv)):
                sent = isinstance(ev, otf2.events.MpiSend)
                parcels = _attrs(ev).get("parcels") if sent and ev.attributes else None
                msg_cols["location"].append(li)
                msg_cols["time"].append(t)
                msg_cols["sent"].append(1 if sent else 0)
                msg_cols["peer"].append(ev.receiver if sent else ev.sender)
                msg_cols["tag"].append(ev.msg_tag)
                msg_cols["bytes"].append(ev.msg_length)
                msg_cols["parcels"].append(parcels if isinstance(parcels, int) else -1)
            elif isinstance(ev, otf2.events.Metric):
                members = getattr(ev.metric, "members", None)
                if members is None:  # a metric instance
                    members = ev.metric.metric_class.members
                for member, value in zip(members, ev.values):
                    code = metric_code.setdefault(member.name, len(metrics))
                    if code == len(metrics):
                        metrics.append(member.name)
                    smp_cols["metric"].append(code)
                    smp_cols["location"].append(li)
                    smp_cols["time"].append(t)
                    smp_cols["value"].append(float(value))
            elif isinstance(ev, otf2.events.ParameterString) and pending is not None:
                pname = ev.parameter.name
                s = ev.string.name if hasattr(ev.string, "name") else str(ev.string)
                if pname in ("reason", "knob") and pname not in pending["parameters"] and s:
                    pending["parameters"][pname] = s
            elif isinstance(ev, otf2.events.ParameterInt) and pending is not None:
                pname = ev.parameter.name
                for key in ("old_value", "new_value"):
                    if pname.startswith(key) and key not in pending["parameters"]:
                        pending["parameters"][key] = ev.value
    # Regions still open at the end of the trace count until its end.
    end = header["offset"] + header["length"] if header["length"] else 0
    for li, stack in enumerate(open_rows):
        while stack:
            ev_cols["end"][stack.pop()] = max(locs[li]["last"], end)
    header["regions"] = regions
    header["metrics"] = metrics
    header["decisions"] = decisions
    # The C++ reader orders the samples metric by metric (each in time order).
    order = sorted(range(len(smp_cols["time"])), key=lambda i: smp_cols["metric"][i])
    smp_cols = {k: [v[i] for i in order] for k, v in smp_cols.items()}
    types = {"location": np.uint32, "region": np.uint32, "begin": np.uint64, "end": np.uint64,
             "guid": np.uint64, "parent": np.uint64, "outer": np.int64, "flags": np.uint8,
             "time": np.uint64, "sent": np.uint8, "peer": np.uint32, "tag": np.uint32,
             "bytes": np.uint64, "parcels": np.int64, "metric": np.uint32, "value": np.float64}
    tables = {name: {k: np.array(v, dtype=types[k]) for k, v in cols.items()}
              for name, cols in (("events", ev_cols), ("samples", smp_cols),
                                 ("messages", msg_cols))}
    return Raw(header, tables)


def _properties(tr):
    """The archive's properties (GRAIN::COMMAND_LINE, ...) through the C API binding."""
    try:
        import _otf2
        return [(n, _otf2.Reader_GetProperty(tr.handle, n))
                for n in _otf2.Reader_GetPropertyNames(tr.handle)]
    except Exception:  # an older binding: the properties are optional
        return []
