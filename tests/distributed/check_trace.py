#!/usr/bin/python3
"""Checks a multi-rank OTF2 archive with the OTF2 Python reader (independent of grain's own):
one location group per rank; per rank, task Enter events (re-entries of inline parents
excluded) equal to the phase counts given as RANK=COUNT; every MpiSend paired with an MpiRecv
on the receiving rank in order, with the same length, and (clocks tied to rank 0's) never
received before it was sent by more than the tolerance.
With --coalesced: also at least one parcel message carrying several parcels (its "parcels"
attribute), and as many parcels in all sent messages as received ones.
Usage: check_trace.py [--coalesced] ARCHIVE RANK=PHASES...
Exit 0 and "trace OK ..." or exit 1 naming why."""
import collections
import sys

import otf2

TOLERANCE_NS = 1_000_000  # clocks of one machine; the offsets' own error is a few µs


def main():
    args = sys.argv[1:]
    coalesced = "--coalesced" in args
    args = [a for a in args if a != "--coalesced"]
    archive = args[0]
    expected = {int(k): int(v) for k, v in (a.split("=") for a in args[1:])}
    parcels_per_message = collections.Counter()
    enters = collections.Counter()
    sends = collections.defaultdict(collections.deque)  # (src, dst) -> (time, length)
    recvs = collections.defaultdict(list)
    groups = set()
    with otf2.reader.open(archive) as trace:
        comm_rank_of = {}
        for loc, ev in trace.events:
            rank = int(loc.group.name.split()[-1])
            groups.add(rank)
            if isinstance(ev, otf2.events.Enter):
                if ev.region.region_role != otf2.RegionRole.TASK:
                    continue
                names = [a.name for a in (ev.attributes or {})]
                if "Resumed inline child" not in names:
                    enters[rank] += 1
            elif isinstance(ev, otf2.events.MpiSend):
                sends[(rank, ev.receiver)].append((ev.time, ev.msg_length))
                if ev.msg_tag == 1:  # parcels (2: control)
                    n = [v for a, v in (ev.attributes or {}).items() if a.name == "parcels"]
                    parcels_per_message[n[0] if n else None] += 1
            elif isinstance(ev, otf2.events.MpiRecv):
                recvs[(ev.sender, rank)].append((ev.time, ev.msg_length))
    problems = []
    if sorted(groups) != sorted(expected):
        problems.append(f"location groups {sorted(groups)}, expected ranks {sorted(expected)}")
    for r, n in expected.items():
        if enters[r] != n:
            problems.append(f"rank {r}: {enters[r]} task phases in the trace, counter says {n}")
    pairs = 0
    for key in set(sends) | set(recvs):
        s, r = list(sends.get(key, [])), recvs.get(key, [])
        if len(s) != len(r):
            problems.append(f"{key[0]} -> {key[1]}: {len(s)} sends, {len(r)} receives")
            continue
        for (ts, ls), (tr, lr) in zip(s, r):
            pairs += 1
            if ls != lr:
                problems.append(f"{key[0]} -> {key[1]}: a send of {ls} B received as {lr} B")
                break
            if tr + TOLERANCE_NS < ts:
                problems.append(f"{key[0]} -> {key[1]}: received {(ts - tr) / 1e3:.1f} us "
                                f"before it was sent")
                break
    if pairs == 0:
        problems.append("no messages in the trace")
    if None in parcels_per_message:
        problems.append(f"{parcels_per_message[None]} parcel messages without a parcel count")
    if coalesced and not any(k and k > 1 for k in parcels_per_message):
        problems.append("no message carries more than one parcel: "
                        f"{dict(parcels_per_message)}")
    if problems:
        print("trace NOT OK:\n  " + "\n  ".join(problems))
        return 1
    print(f"trace OK: {len(groups)} ranks, task phases {dict(sorted(enters.items()))}, "
          f"{pairs} messages paired, parcels per message "
          f"{dict(sorted(parcels_per_message.items()))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
