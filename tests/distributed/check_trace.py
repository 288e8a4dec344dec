#!/usr/bin/python3
"""Checks a multi-rank OTF2 archive with the OTF2 Python reader (independent of grain's own):
one location group per rank; per rank, task Enter events (re-entries of inline parents
excluded) equal to the phase counts given as RANK=COUNT; every MpiSend paired with an MpiRecv
on the receiving rank in order, with the same length, and (clocks tied to rank 0's) never
received before it was sent by more than the tolerance.
Usage: check_trace.py ARCHIVE RANK=PHASES...   Exit 0 and "trace OK ..." or exit 1 naming why."""
import collections
import sys

import otf2

TOLERANCE_NS = 1_000_000  # clocks of one machine; the offsets' own error is a few µs


def main():
    archive = sys.argv[1]
    expected = {int(k): int(v) for k, v in (a.split("=") for a in sys.argv[2:])}
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
    if problems:
        print("trace NOT OK:\n  " + "\n  ".join(problems))
        return 1
    print(f"trace OK: {len(groups)} ranks, task phases {dict(sorted(enters.items()))}, "
          f"{pairs} messages paired")
    return 0


if __name__ == "__main__":
    sys.exit(main())
