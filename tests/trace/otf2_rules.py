#!/usr/bin/python3
"""The structure other OTF2 readers rely on, checked with the OTF2 Python reader.

  * Messages resolve the way the OTF2 standard and Score-P define a communicator: a Comm's
    group is a COMM_GROUP whose members are ranks, i.e. indices into the COMM_LOCATIONS group
    of the same paradigm; the reader (otf2-print, the Python bindings, Vampir) turns rank R into
    the location that sends and receives for R. Every MpiSend's receiver must so name a
    location of that rank which records a matching MpiRecv from the sender, and vice versa.
  * Metrics are written as Score-P writes them: on a CPU thread only the synchronous metric
    class that comes first in the definitions (its PAPI counters), everything sampled on its
    own (grain's counters and knobs) on a location of type METRIC. LLNL's pipit builds its
    metric columns from the first metric class only and reads Metric events on CPU threads
    alone, so a Metric event of another class on a CPU thread is its KeyError.

usage: otf2_rules.py ARCHIVE...   (exit 0: "rules OK", 1: what breaks them)
"""
import collections
import sys

import otf2


def check(archive):
    problems = []
    stats = collections.Counter()
    with otf2.reader.open(archive) as trace:
        defs = trace.definitions
        classes = list(defs.metric_classes)
        first_class = classes[0]._ref if classes else None
        sends = collections.defaultdict(list)  # (sender location, receiver location) -> lengths
        recvs = collections.defaultdict(list)
        comms = {}
        for loc, ev in trace.events:
            is_cpu = loc.type == otf2.LocationType.CPU_THREAD
            if isinstance(ev, otf2.events.Metric):
                stats["metric events"] += 1
                cls = ev.metric
                if is_cpu and getattr(cls, "_ref", None) != first_class:
                    stats["bad metric events"] += 1
                    if stats["bad metric events"] == 1:
                        names = [m.name for m in getattr(cls, "members", [])]
                        problems.append("a Metric event of class %s on the CPU thread '%s' (%s); "
                                        "pipit reads only the first class there" %
                                        (names, loc.name, loc.group.name))
            elif isinstance(ev, (otf2.events.MpiSend, otf2.events.MpiRecv)):
                send = isinstance(ev, otf2.events.MpiSend)
                comm = ev.communicator
                group = comm.group
                key = comm._ref
                if key not in comms:
                    comms[key] = group
                    if group.group_type != otf2.GroupType.COMM_GROUP:
                        problems.append("communicator '%s' has a group of type %s, not "
                                        "COMM_GROUP" % (comm.name, group.group_type))
                members = list(group.members)
                peer = ev.receiver if send else ev.sender
                if peer >= len(members):
                    problems.append("rank %d is not in communicator '%s' (%d members)" %
                                    (peer, comm.name, len(members)))
                    break
                other = members[peer]
                if not isinstance(other, otf2.definitions.Location):
                    problems.append("rank %d of '%s' does not resolve to a location" %
                                    (peer, comm.name))
                    break
                if send:
                    sends[(loc._ref, other._ref)].append(ev.msg_length)
                else:
                    recvs[(other._ref, loc._ref)].append(ev.msg_length)
                stats["sends" if send else "receives"] += 1
        for key in set(sends) | set(recvs):
            s, r = sends.get(key, []), recvs.get(key, [])
            if s != r:
                problems.append("location %d -> %d: %d sends and %d receives through the "
                                "communicator do not pair up" % (key[0], key[1], len(s), len(r)))
        stats["location pairs"] = len(set(sends) | set(recvs))
    return problems, stats


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    bad = False
    for archive in argv:
        problems, stats = check(archive)
        if problems:
            bad = True
            print("%s: rules NOT OK:\n  %s" % (archive, "\n  ".join(problems)))
        else:
            print("%s: rules OK (%s)" % (archive, ", ".join(
                "%s %d" % kv for kv in sorted(stats.items()))))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
