"""Another process on the machine: a busy loop that takes one core while a run goes on.

A shared node runs other jobs beside the program; a policy must not read the CPU they take
as its own overhead. BusyLoop is that other job, reproducible: one process that spins, never
sleeps, started `start` seconds after arm() and stopped at `stop` seconds (None: when the run
ends, close()). cpu_s is the CPU time it got, which says how much of a core it really took.
It runs in a session of its own, as another user's job would: where the kernel groups the
processes of a session for fair scheduling (Linux's autogroup), a child in the program's own
session would compete for the program's share alone, and `nice` would only move CPU between
the two. `nice` (negative: a larger share of its group) is there for kernels without groups.

    busy = BusyLoop(start=1.0, stop=2.0)   # or BusyLoop() for the whole run
    busy.arm(); p = run(cmd); busy.close()
"""

import os
import subprocess
import threading


class BusyLoop:
    def __init__(self, start=0.0, stop=None, nice=0):
        self.start, self.stop, self.nice = start, stop, nice
        self.proc = None
        self.cpu_s = 0.0
        self._lock = threading.Lock()
        self._timers = []
        self._armed = False

    def _begin(self):
        with self._lock:
            if self._armed and self.proc is None:
                nice = self.nice
                self.proc = subprocess.Popen(["/bin/sh", "-c", "while :; do :; done"],
                                             start_new_session=True,
                                             preexec_fn=(lambda: os.nice(nice)) if nice else None)

    def _end(self):
        with self._lock:
            self._armed = False
            if self.proc is not None and self.proc.returncode is None:
                self.proc.kill()
                _, status, usage = os.wait4(self.proc.pid, 0)
                self.proc.returncode = status
                self.cpu_s = usage.ru_utime + usage.ru_stime

    def arm(self):
        """Start the clock: the loop begins `start` s from now and ends at `stop` s."""
        self._armed = True
        self._timers = [threading.Timer(self.start, self._begin)]
        if self.stop is not None:
            self._timers.append(threading.Timer(self.stop, self._end))
        for t in self._timers:
            t.daemon = True
            t.start()

    def close(self):
        """Stop it now if it still runs (the program ended first); cpu_s is then known."""
        for t in self._timers:
            t.cancel()
        self._end()

    def __enter__(self):
        self.arm()
        return self

    def __exit__(self, *exc):
        self.close()
        return False
