"""A sampling CPU profile of this process with py-spy (``bench.profile --spy``).

cProfile times every call, so call-heavy code (pymongo's layers, Django's middleware) looks
several times costlier than it is; pyinstrument samples the wall clock, so time spent waiting for
MongoDB counts as the request's. py-spy samples from outside, without touching the interpreter,
and with ``--gil`` keeps only the samples where a thread holds the GIL: Python running, which is
the CPU the benchmark's web workers spend. py-spy is not one of our requirements: ``pip install
--target /tmp/pyspy py-spy`` and pass ``--spy-binary /tmp/pyspy/bin/py-spy`` (or put it on PATH).
It needs ptrace on this process (root, or ``kernel.yama.ptrace_scope`` 0).
"""

import os
import re
import shutil
import signal
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

RATE = 400  # samples a second: enough for a few thousand samples in a run of seconds


def find_binary(given: str = "") -> str:
    binary = given or shutil.which("py-spy") or ""
    if not binary or not Path(binary).exists():
        raise SystemExit(
            "py-spy not found: pip install --target /tmp/pyspy py-spy, then --spy-binary /tmp/pyspy/bin/py-spy"
        )
    return binary


class Spy:
    """py-spy recording this process (only samples holding the GIL) while the block runs."""

    def __init__(self, output: Path, binary: str, rate: int = RATE):
        self.output, self.binary, self.rate = output, binary, rate
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> "Spy":
        self.output.unlink(missing_ok=True)
        args = [self.binary, "record", "--gil", "--rate", str(self.rate), "--format", "raw"]
        args += ["--output", str(self.output), "--pid", str(os.getpid())]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)  # attached before the first timed request (py-spy needs a moment to find the interpreter)
        if self.process.poll() is not None:
            raise SystemExit(f"py-spy could not record: {self.process.stderr.read() if self.process.stderr else ''}")
        return self

    def __exit__(self, *exc) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGINT)  # py-spy writes its file on Ctrl-C
        _out, err = self.process.communicate(timeout=60)
        if not self.output.exists():
            raise SystemExit(f"py-spy wrote nothing: {err}")


@dataclass(frozen=True)
class Share:
    frame: str  # "function (file)", the file relative to site-packages or the project
    percent: float


_LINE_NUMBER = re.compile(r":\d+\)$")


def _frame_name(frame: str, root: str) -> str:
    name, _, place = frame.rpartition(" (")
    place = _LINE_NUMBER.sub(")", "(" + place).strip("()")
    place = place.split("site-packages/")[-1].removeprefix(root)
    return f"{name} ({place})"


def shares(raw: str, *, within: str, root: str = "") -> tuple[int, list[Share], list[Share]]:
    """From py-spy's raw output (one ``frame;frame;... count`` line per distinct stack): how many
    samples pass through a function named ``within`` (a nested one by its own name:
    ``main.<locals>.once`` is ``once``), and for every frame the share of those samples it is on
    (including what it calls) and at the top of (its own code), highest first."""
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = [_frame_name(frame, root) for frame in stack.split(";")]
        if not any(frame.partition(" (")[0].rpartition(".")[2] == within for frame in frames):
            continue
        n = int(count)
        total += n
        for frame in set(frames):
            inclusive[frame] += n
        own[frames[-1]] += n
    if not total:
        return 0, [], []

    def ranked(counts: Counter[str]) -> list[Share]:
        return [Share(frame, 100 * n / total) for frame, n in counts.most_common()]

    return total, ranked(inclusive), ranked(own)


def by_package(own: list[Share]) -> list[Share]:
    """Own shares summed by the top folder of their file (pymongo, bson, django, booking, ...);
    a file without a folder (the standard library's, py-spy names them bare) is "stdlib"."""
    sums: Counter[str] = Counter()
    for share in own:
        place = share.frame.rpartition(" (")[2].rstrip(")")
        package = place.split("/")[0] if "/" in place else "stdlib"
        sums[package] += share.percent
    return [Share(package, percent) for package, percent in sums.most_common()]
