#!/usr/bin/python3
"""An independent reader of grain's Perfetto traces, for the tests: decodes the file with
python3-protobuf (message classes compiled by protoc from perfetto_trace.proto, the subset of
Perfetto's published format grain writes), applies Perfetto's sequence rules itself
(incremental clocks, interned names, packet defaults), rebuilds the slices, flows, counters
and instant events, and prints a summary as JSON. Anything a conforming reader could not make
sense of goes into "errors", among them a thread id that two processes share or that is
another process's pid (trace processor would merge their threads). Several ranks' files
concatenated (cat trace.rank*.pftrace) are one trace: the messages (MpiSend/MpiRecv instants
on the "network" threads) are paired by their flow ids.

usage: perfetto_decode.py PERFETTO_TRACE.proto TRACE_FILE
"""
import collections
import importlib
import json
import os
import subprocess
import sys
import tempfile


def load_messages(proto):
    out = tempfile.mkdtemp(prefix="grain-pftrace-")
    subprocess.run(["protoc", "-I", os.path.dirname(proto), "--python_out", out, proto],
                   check=True)
    sys.path.insert(0, out)
    return importlib.import_module(os.path.basename(proto)[:-len(".proto")] + "_pb2")


class Sequence:
    def __init__(self):
        self.clocks = {}          # clock id -> [snapshot value, monotonic at snapshot, incremental]
        self.last = {}            # incremental clock id -> its current value
        self.names = {}           # interned event names
        self.clock_id = None      # TracePacketDefaults.timestamp_clock_id
        self.track = None         # TrackEventDefaults.track_uuid
        self.cleared = False


def main():
    pb = load_messages(sys.argv[1])
    data = open(sys.argv[2], "rb").read()
    trace = pb.Trace()
    trace.ParseFromString(data)

    errors = []
    seqs = collections.defaultdict(Sequence)
    tracks = {}
    primary_clock = None
    open_slices = collections.defaultdict(list)   # track -> [(name, ts, slice index)]
    slices = []                                   # [name, track, ts, dur]
    flow_source = {}                              # flow id -> slice index
    edges = []                                    # (source slice, target slice, flow id)
    counters = collections.defaultdict(list)      # counter name -> [(ts, value)]
    instants = []
    per_sequence_last = {}
    worker_packets = 0
    last_ts = 0
    events = []            # (ts, packet index, track, name, TrackEvent)
    unmatched_flows = []   # FLOW_IN whose parent slice is not in the trace
    processes = {}         # pid -> process name
    threads = {}           # tid -> (pid, thread name)
    message_starts = {}    # flow id -> (ts, track, args)
    message_ends = {}

    def err(msg):
        if len(errors) < 20:
            errors.append(msg)

    for i, p in enumerate(trace.packet):
        sid = p.trusted_packet_sequence_id
        s = seqs[sid]
        if p.sequence_flags & 1:
            s.__init__()
            s.cleared = True
        elif not s.cleared:
            err(f"packet {i}: sequence {sid} used before its incremental state was cleared")
        if p.HasField("trace_packet_defaults"):
            d = p.trace_packet_defaults
            if d.HasField("timestamp_clock_id"):
                s.clock_id = d.timestamp_clock_id
            if d.HasField("track_event_defaults"):
                s.track = d.track_event_defaults.track_uuid
        for n in p.interned_data.event_names:
            s.names[n.iid] = n.name
        kind = p.WhichOneof("data")
        if kind == "clock_snapshot":
            cs = p.clock_snapshot
            if cs.HasField("primary_trace_clock"):
                primary_clock = cs.primary_trace_clock
            mono = [c.timestamp for c in cs.clocks if c.clock_id == 3]
            if not mono:
                err(f"packet {i}: clock snapshot without CLOCK_MONOTONIC")
                continue
            for c in cs.clocks:
                s.clocks[c.clock_id] = [c.timestamp, mono[0], c.is_incremental]
                if c.is_incremental:
                    s.last[c.clock_id] = c.timestamp
            continue
        if kind == "track_descriptor":
            t = p.track_descriptor
            if t.uuid in tracks:
                err(f"track {t.uuid} described twice")
            name = t.name or t.thread.thread_name or t.process.process_name
            if t.HasField("process"):
                processes[t.process.pid] = t.process.process_name
            if t.HasField("thread"):
                tid, pid = t.thread.tid, t.thread.pid
                if tid in threads and threads[tid][0] != pid:
                    err(f"thread id {tid} in processes {threads[tid][0]} and {pid}")
                threads[tid] = (pid, t.thread.thread_name)
            tracks[t.uuid] = {"name": name,
                              "kind": "thread" if t.HasField("thread") else
                                      "process" if t.HasField("process") else
                                      "counter" if t.HasField("counter") else "other",
                              "unit": t.counter.unit_name,
                              "parent": t.parent_uuid}
            continue
        if kind != "track_event":
            continue
        # The packet's time on CLOCK_MONOTONIC.
        clock = p.timestamp_clock_id if p.HasField("timestamp_clock_id") else s.clock_id
        if clock is None or not p.HasField("timestamp"):
            err(f"packet {i}: track event without a timestamp or clock")
            continue
        if clock == 3:
            ts = p.timestamp
        elif clock in s.clocks:
            value = p.timestamp
            if s.clocks[clock][2]:
                value = s.last[clock] + p.timestamp
                s.last[clock] = value
            base, mono, _ = s.clocks[clock]
            ts = mono + (value - base)
        else:
            err(f"packet {i}: clock {clock} has no snapshot on sequence {sid}")
            continue
        if ts < per_sequence_last.get(sid, 0):
            err(f"packet {i}: time goes back on sequence {sid}")
        per_sequence_last[sid] = ts
        last_ts = max(last_ts, ts)
        e = p.track_event
        track = e.track_uuid if e.HasField("track_uuid") else s.track
        if e.HasField("name_iid"):
            if e.name_iid not in s.names:
                err(f"packet {i}: name iid {e.name_iid} not interned on sequence {sid}")
            name = s.names.get(e.name_iid, "?")
        else:
            name = e.name
        events.append((ts, i, track, name, e))

    # As Perfetto's trace processor does: sequences are merged by timestamp (stable: a sequence
    # keeps its order at equal times), and slices, flows and counters are built in that order.
    events.sort(key=lambda x: (x[0], x[1]))
    for ts, i, track, name, e in events:
        if track not in tracks:
            err(f"packet {i}: track {track} has no descriptor")
            continue
        args = {}
        for a in e.debug_annotations:
            args[a.name] = getattr(a, a.WhichOneof("value"))
        if e.type == e.TYPE_SLICE_BEGIN:
            worker_packets += 1
            idx = len(slices)
            slices.append([name, track, ts, None, args])
            open_slices[track].append(idx)
            for fid in e.flow_ids:
                if fid in flow_source:
                    err(f"flow {fid} started twice")
                flow_source[fid] = idx
            le = e.legacy_event
            if le.HasField("bind_id"):
                if le.flow_direction != le.FLOW_IN:
                    err(f"packet {i}: legacy flow direction {le.flow_direction}")
                src = flow_source.get(le.bind_id)
                if src is None:
                    unmatched_flows.append(le.bind_id)
                else:
                    edges.append((src, idx))
        elif e.type == e.TYPE_SLICE_END:
            worker_packets += 1
            if not open_slices[track]:
                err(f"packet {i}: slice end on track {track} without an open slice")
                continue
            idx = open_slices[track].pop()
            slices[idx][3] = ts - slices[idx][2]
        elif e.type == e.TYPE_COUNTER:
            if tracks[track]["kind"] != "counter":
                err(f"packet {i}: counter value on a non-counter track")
            counters[tracks[track]["name"]].append((ts, e.double_counter_value))
        elif e.type == e.TYPE_INSTANT and (e.flow_ids or e.terminating_flow_ids):
            # A message: its send starts the flow, its receive (another file) ends it.
            for fid in e.flow_ids:
                if fid in message_starts:
                    err(f"message flow {fid} started twice")
                message_starts[fid] = (ts, track, args)
            for fid in e.terminating_flow_ids:
                if fid in message_ends:
                    err(f"message flow {fid} ended twice")
                message_ends[fid] = (ts, track, args)
        elif e.type == e.TYPE_INSTANT:
            instants.append({"name": name, "track": tracks[track]["name"], "ts": ts, "args": args})

    for track, stack in open_slices.items():
        if stack:
            err(f"{len(stack)} slices left open on track {track}")
    for src, dst in edges:
        if slices[src][2] > slices[dst][2]:
            err("a flow goes back in time")
            break
    for tid, (pid, tname) in threads.items():
        if tid in processes and tid != pid:
            err(f"thread id {tid} ({tname}) is the pid of process {processes[tid]}")
    paired = [fid for fid in message_starts if fid in message_ends]
    message_pairs = collections.Counter()
    for fid in paired:
        (ts0, tr0, a0), (ts1, tr1, a1) = message_starts[fid], message_ends[fid]
        p0, p1 = tracks[tr0]["parent"], tracks[tr1]["parent"]
        if p0 == p1:
            err(f"message flow {fid} starts and ends in one process")
        message_pairs["%s -> %s" % (tracks[p0]["name"], tracks[p1]["name"])] += 1
    names = collections.Counter(s[0] for s in slices)
    task = [s for s in slices if s[0].startswith("task:")]
    guids = set()
    for src, dst in edges:
        guids.add(src)
    summary = {
        "packets": len(trace.packet),
        "bytes": len(data),
        "primary_clock": primary_clock,
        "sequences": len(seqs),
        "tracks": sorted(t["name"] for t in tracks.values()),
        "thread_tracks": sorted(t["name"] for t in tracks.values() if t["kind"] == "thread"),
        "slices": dict(names),
        "task_slices": len(task),
        "resumed_child_slices": sum(1 for s in task if "resumed_child" in s[4]),
        "idle_slices": names.get("Idle", 0),
        "worker_events": worker_packets,
        "negative_durations": sum(1 for s in slices if s[3] is not None and s[3] < 0),
        "first_ts": min((s[2] for s in slices), default=0),
        "last_ts": last_ts,
        "flow_edges": len(edges),
        "flows_without_source": len(unmatched_flows),
        "flow_sources": len(guids),
        "flows_from_idle": sum(1 for src, _ in edges if slices[src][0] == "Idle"),
        "counters": {k: {"n": len(v), "last": v[-1][1],
                         "unit": next((t["unit"] for t in tracks.values() if t["name"] == k), "")}
                     for k, v in counters.items()},
        "instants": instants,
        "processes": sorted(processes.values()),
        "thread_ids": sorted(threads),
        "messages_sent": len(message_starts),
        "messages_received": len(message_ends),
        "messages_paired": len(paired),
        "message_pairs": dict(message_pairs),
        "coalesced_messages": sum(1 for _, _, a in message_starts.values()
                                  if a.get("parcels", 0) > 1),
        "errors": errors,
    }
    json.dump(summary, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
