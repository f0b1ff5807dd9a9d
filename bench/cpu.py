"""CPU time by process over a timed run's measured seconds, read from /proc (Linux).

Latency and throughput say how fast a request is on a shared 2-core machine; CPU per request says
what it costs, and where: gunicorn's workers (Django), the MongoDB stand-in, Redis. The machine
total shows how much of the two cores the run (client included) kept busy.
"""

import os
import time
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU of a process so far; None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # the command name in (...) may contain spaces
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime


def machine_busy_seconds() -> float:
    """CPU seconds all cores spent on anything but idle and iowait since boot.

    guest and guest_nice are left out: the kernel already counts them in user and nice.
    """
    with open("/proc/stat") as f:
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in f.readline().split()[1:9])
    return (user + nice + system + irq + softirq + steal) / CLOCK_TICKS


def children(pid: int) -> list[int]:
    """The pids whose parent is ``pid`` (gunicorn's workers are its master's children)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # exited while we looked
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(entry.name))
    return sorted(out)


class CpuMeter:
    """CPU used by named groups of processes, and by the machine, between ``__enter__`` and ``__exit__``.

    ``groups`` maps a name ("web", "db", "redis") to its pids, or to None when the process is not
    ours to read (a real MongoDB at MONGODB_URI, a Redis at REDIS_URL). bench.load.run enters the
    meter when its clients start the measured seconds and leaves it when they end, so the warmup
    and the clients' setup stay out.
    """

    def __init__(self, groups: dict[str, list[int] | None]):
        self.groups = groups
        self.seconds = 0.0
        self.cpu: dict[str, float | None] = {}
        self.machine = 0.0

    def _snapshot(self) -> tuple[float, float, dict[int, float | None]]:
        pids = {pid for pids in self.groups.values() if pids for pid in pids}
        return time.monotonic(), machine_busy_seconds(), {pid: process_cpu_seconds(pid) for pid in pids}

    def __enter__(self) -> "CpuMeter":
        self._start = self._snapshot()
        return self

    def __exit__(self, *exc) -> None:
        (wall0, machine0, procs0), (wall1, machine1, procs1) = self._start, self._snapshot()
        self.seconds = wall1 - wall0
        self.machine = machine1 - machine0
        for name, pids in self.groups.items():
            if pids is None:
                self.cpu[name] = None
                continue
            # a process that went away mid-run (not expected) is left out rather than guessed
            self.cpu[name] = sum(
                procs1[pid] - procs0[pid] for pid in pids if procs0[pid] is not None and procs1[pid] is not None
            )

    def per_request(self, requests: int) -> dict:
        """Milliseconds of CPU per request for each group, and the cores the machine kept busy."""
        out: dict = {"seconds": self.seconds, "requests": requests}
        for name, cpu in self.cpu.items():
            out[f"{name}_ms_per_req"] = cpu * 1000 / requests if cpu is not None and requests else None
        out["cores_busy"] = self.machine / self.seconds if self.seconds > 0 else None
        return out
