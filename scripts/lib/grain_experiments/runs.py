"""Running programs: one run with a timeout, and rounds of configurations interleaved.

Interleaving (A B C, A B C, ... rather than A A A, B B B, ...) is what makes the medians of a
shared machine comparable: a slow drift of its speed hits every configuration alike. The
rounds print their progress with an estimate of the time left, on stderr.
"""

import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass


@dataclass
class Run:
    """What one run of a program left: its command, status, output and wall time."""
    cmd: list
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False

    @property
    def ok(self):
        return self.returncode == 0 and not self.timed_out

    def describe(self, limit=6000):
        """The command and why it failed, with its output (its start and its end when longer
        than `limit` characters: the program's message is usually the first line)."""
        why = (f"timed out after {self.seconds:.0f} s" if self.timed_out
               else f"exited {self.returncode}")
        out = self.stdout + self.stderr
        if len(out) > limit:
            out = out[:limit // 2] + "\n[...]\n" + out[-limit // 2:]
        return f"{shlex.join(self.cmd)} {why}:\n{out}"

    def json_lines(self):
        """The lines of stdout that are JSON objects (the programs' result lines)."""
        rows = []
        for line in self.stdout.splitlines():
            if line.startswith("{"):
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    pass
        return rows


def run(cmd, timeout=600, merge_stderr=False, verbose=False):
    """Run `cmd` (a list) and return a Run; a timeout is a failed Run, not an exception."""
    cmd = [str(c) for c in cmd]
    if verbose:
        print("  $ " + shlex.join(cmd), file=sys.stderr)
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, timeout=timeout,
                           stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE)
    except subprocess.TimeoutExpired as e:
        def text(b):
            return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")
        return Run(cmd, -1, text(e.stdout), text(e.stderr), time.monotonic() - t0, True)
    except OSError as e:
        return Run(cmd, 127, "", str(e), time.monotonic() - t0)
    return Run(cmd, p.returncode, p.stdout or "", p.stderr or "", time.monotonic() - t0)


def _duration(s):
    s = int(round(s))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


class Progress:
    """`NAME: round i/n done, ETA ...` lines on stderr, one per finished round."""

    def __init__(self, total, what="round", name=None, stream=None):
        self.total, self.what, self.done = total, what, 0
        self.name = name if name is not None else "scripts/" + os.path.basename(sys.argv[0])
        self.stream = stream or sys.stderr
        self.t0 = time.monotonic()

    def step(self, detail=""):
        self.done += 1
        elapsed = time.monotonic() - self.t0
        left = elapsed / self.done * (self.total - self.done)
        eta = f", about {_duration(left)} left" if self.done < self.total else \
            f" in {_duration(elapsed)}"
        prefix = f"{self.name}: " if self.name else ""
        print(f"{prefix}{self.what} {self.done}/{self.total} done{eta}"
              f"{'; ' + detail if detail else ''}", file=self.stream, flush=True)


def interleaved(configs, rounds, shuffle=None, progress=True, what="round", name=None):
    """Yield (round, config) for `rounds` rounds of every configuration, in the order given
    (or shuffled anew each round by the random.Random `shuffle`), and print each finished
    round with an estimate of the time left."""
    configs = list(configs)
    prog = Progress(rounds, what, name) if progress else None
    for r in range(rounds):
        order = list(configs)
        if shuffle is not None:
            shuffle.shuffle(order)
        for c in order:
            yield r, c
        if prog:
            prog.step()
