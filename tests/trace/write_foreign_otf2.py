#!/usr/bin/python3
"""Writes a small OTF2 archive that grain did not write (the python otf2 writer API): two
threads with nested regions named like another tool would name them, a metric, no GUIDs, no
policy location. Used by the tests of scripts/grain-trace.

  write_foreign_otf2.py DIR        -> DIR/traces.otf2
"""
import sys

import otf2
from otf2.enums import Type

TIMER = 1_000_000  # microsecond ticks, not grain's nanoseconds


def main(path):
    with otf2.writer.open(path, timer_resolution=TIMER) as trace:
        root = trace.definitions.system_tree_node("cluster")
        node = trace.definitions.system_tree_node("node17", parent=root)
        group = trace.definitions.location_group("rank 0", system_tree_parent=node)
        main_fn = trace.definitions.region("main")
        solve = trace.definitions.region("solve")
        wait = trace.definitions.region("MPI_Wait")
        iteration = trace.definitions.attribute("iteration", type=Type.UINT32)
        temp = trace.definitions.metric("temperature", unit="C")
        t0 = 1000
        for th in range(2):
            w = trace.event_writer("Thread %d" % th, group=group)
            t = t0
            w.enter(t, main_fn)
            for i in range(5):
                w.enter(t + 10, solve, attributes={iteration: i})
                w.enter(t + 60, wait)
                w.leave(t + 80, wait)
                w.leave(t + 100, solve)
                t += 100
            w.leave(t + 10, main_fn)
        m = trace.event_writer("sensor", group=group)
        for i in range(6):
            m.metric(t0 + 100 * i, temp, 40.0 + i)


if __name__ == "__main__":
    main(sys.argv[1])
