"""What else the machine did while a case was timed (issue 27): the CPU time of every other process and the
hypervisor's steal, from /proc/stat against this process's own times, and the load average before and after.

Why not the load average alone: it is a one-minute mean that counts this process's own threads, so after any
case it reads about as high as the bench itself makes it. Other processes' CPU time is what slows a call: on a
2-core machine a call on two worker threads waits for the slower one, and a preempted worker resumes at the
next scheduler tick (cases run beside other work cluster at multiples of 4 ms here). A case run beside more
than BUSY_CORES of other work, on average, is marked in the table and the JSON (``machine_load.busy``).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

BUSY_CORES = 0.25   # other processes' CPU (plus steal) averaged over a case, in cores, above which it is marked


@dataclass(frozen=True)
class Sample:
    wall: float
    busy_s: float | None    # all CPUs' non-idle time but steal (/proc/stat), seconds; None off Linux
    steal_s: float | None
    own_s: float            # this process's CPU time (and its waited-for children's)
    load: float | None      # the one-minute load average


def _proc_stat() -> tuple[float, float] | tuple[None, None]:
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None, None
    tick = os.sysconf("SC_CLK_TCK")
    user, nice, system, _idle, _iowait, irq, softirq = fields[:7]
    steal = fields[7] if len(fields) > 7 else 0
    return (user + nice + system + irq + softirq) / tick, steal / tick


def sample() -> Sample:
    busy, steal = _proc_stat()
    t = os.times()
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = None
    return Sample(time.perf_counter(), busy, steal, t.user + t.system + t.children_user + t.children_system, load)


def between(a: Sample, b: Sample) -> dict:
    """The load of the interval from ``a`` to ``b``: other processes' CPU and steal in cores (None where the
    system does not say), the load average at both ends, and whether the interval counts as busy."""
    wall = max(b.wall - a.wall, 1e-9)
    others = steal = None
    if a.busy_s is not None and b.busy_s is not None:
        # /proc/stat counts in clock ticks (10 ms): a short interval reads 0 or one tick of noise
        others = max(0.0, (b.busy_s - a.busy_s) - (b.own_s - a.own_s)) / wall
        steal = max(0.0, b.steal_s - a.steal_s) / wall
    busy = others is not None and wall >= 0.1 and others + steal > BUSY_CORES
    return {"seconds": round(wall, 3), "others_cores": None if others is None else round(others, 3),
            "steal_cores": None if steal is None else round(steal, 3), "load_before": a.load, "load_after": b.load,
            "busy": busy}
