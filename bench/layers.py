"""CPU per layer of a request, timed exactly (``bench.profile --layers``).

py-spy (bench/spy.py) samples, so its shares of small frames wobble from run to run, and
comparing two whole runs cannot see a change of a few percent: identical runs of
``bench.profile hold_release`` differ by up to a tenth on these machines. This wraps a few named
functions with a CPU clock instead. Each label counts its outermost call only, so a function that
calls itself, or a layer reached twice on one stack, is not counted twice. The clock costs well
under a microsecond a call, and only the listed functions are wrapped, so the other code is not
slowed as cProfile slows it. The harness is single-threaded, so the counts need no lock.
"""

import importlib
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import wraps


@dataclass(frozen=True)
class Layer:
    """A function to time: ``target`` is "module:attribute" or "module:Class.attribute"."""

    label: str
    target: str


@dataclass(frozen=True)
class Row:
    label: str
    micros_per_request: float
    percent: float  # of the first layer's time (the whole request)
    calls_per_request: float


@dataclass
class Timer:
    clock: Callable[[], float] = time.process_time
    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    calls: Counter = field(default_factory=Counter)
    _running: Counter = field(default_factory=Counter)

    def timed(self, label: str, function: Callable) -> Callable:
        @wraps(function)
        def run(*args, **kwargs):
            if self._running[label]:  # already inside this layer: its outer call counts the time
                return function(*args, **kwargs)
            self._running[label] += 1
            started = self.clock()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[label] += self.clock() - started
                self.calls[label] += 1
                self._running[label] -= 1

        return run

    def rows(self, layers: list[Layer]) -> list[Row]:
        """One row per label, in the order first given, per call of the first layer (the request)
        and as a share of its time. Layers sharing a label (several functions timed as one) make
        one row."""
        whole = self.seconds[layers[0].label] or 1.0
        requests = self.calls[layers[0].label] or 1
        labels = list(dict.fromkeys(layer.label for layer in layers))
        return [
            Row(
                label,
                self.seconds[label] * 1e6 / requests,
                100 * self.seconds[label] / whole,
                self.calls[label] / requests,
            )
            for label in labels
        ]


_INHERITED = object()


def _owner_and_name(target: str) -> tuple[object, str]:
    module_name, _, path = target.partition(":")
    owner: object = importlib.import_module(module_name)
    *parents, name = path.split(".")
    for parent in parents:
        owner = getattr(owner, parent)
    return owner, name


@contextmanager
def timing(layers: list[Layer], timer: Timer | None = None) -> Iterator[Timer]:
    """The listed functions timed while the block runs, and put back afterwards. Callers must
    look them up by attribute at call time (``module.function(...)``, a method): a reference
    taken before the block keeps calling the untimed function."""
    timer = timer or Timer()
    originals: list[tuple[object, str, object]] = []
    try:
        for layer in layers:
            owner, name = _owner_and_name(layer.target)
            # a method a class inherits is wrapped on the class named, and removed from it again
            originals.append((owner, name, vars(owner).get(name, _INHERITED)))
            setattr(owner, name, timer.timed(layer.label, getattr(owner, name)))
        yield timer
    finally:
        for owner, name, original in reversed(originals):
            if original is _INHERITED:
                delattr(owner, name)
            else:
                setattr(owner, name, original)
