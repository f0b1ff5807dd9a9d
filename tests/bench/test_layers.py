"""Timing a request's layers exactly (bench/layers.py): the figures ``bench.profile --layers`` prints."""

import sys
import types

import pytest

from bench import layers


class Clock:
    """A CPU clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Base:
    def inherited(self) -> str:
        return "base"


class Handler(Base):
    def handle(self, depth: int = 0) -> str:
        CLOCK.now += 1.0
        if depth:
            return self.handle(depth - 1)  # the same layer again, inside itself
        return tool.work()


CLOCK = Clock()
tool = types.ModuleType("layers_test_tool")


def work() -> str:
    CLOCK.now += 0.5
    return "done"


def fail() -> None:
    CLOCK.now += 0.25
    raise ValueError("refused")


tool.work = work  # type: ignore[attr-defined]
tool.fail = fail  # type: ignore[attr-defined]
sys.modules["layers_test_tool"] = tool
sys.modules["layers_test_module"] = sys.modules[__name__]

LAYERS = [
    layers.Layer("request", "layers_test_module:Handler.handle"),
    layers.Layer("tools", "layers_test_tool:work"),
    layers.Layer("tools", "layers_test_tool:fail"),
    layers.Layer("never called", "layers_test_module:Base.inherited"),
]


def test_each_label_counts_its_outermost_calls_and_shared_labels_make_one_row():
    with layers.timing(LAYERS, layers.Timer(clock=CLOCK)) as timer:
        assert Handler().handle(depth=2) == "done"  # three nested calls of one layer: one request
        assert Handler().handle() == "done"
        with pytest.raises(ValueError):
            tool.fail()  # an exception still stops its layer's clock

    listed = timer.rows(LAYERS)
    assert [row.label for row in listed] == ["request", "tools", "never called"]
    rows = {row.label: row for row in listed}
    assert rows["request"].calls_per_request == 1
    assert rows["request"].micros_per_request == pytest.approx((3.0 + 0.5 + 1.0 + 0.5) / 2 * 1e6)
    assert rows["request"].percent == pytest.approx(100)
    assert rows["tools"].calls_per_request == pytest.approx(3 / 2)  # work twice, fail once
    assert rows["tools"].micros_per_request == pytest.approx((0.5 + 0.5 + 0.25) / 2 * 1e6)
    assert rows["tools"].percent == pytest.approx(100 * 1.25 / 5.0)
    assert rows["never called"].calls_per_request == 0


def test_the_functions_are_put_back_when_the_block_ends():
    handle, inherited_before = Handler.__dict__["handle"], Handler.inherited
    with pytest.raises(RuntimeError), layers.timing(LAYERS, layers.Timer(clock=CLOCK)):
        assert Handler.__dict__["handle"] is not handle
        assert vars(Base)["inherited"] is not inherited_before
        raise RuntimeError("the block failed")

    assert Handler.__dict__["handle"] is handle
    assert tool.work is work and tool.fail is fail
    assert Handler.inherited is inherited_before and "inherited" not in vars(Handler)


def test_a_method_a_class_inherits_is_timed_on_that_class_and_removed_from_it_afterwards():
    inheriting = [layers.Layer("request", "layers_test_module:Handler.inherited")]
    with layers.timing(inheriting, layers.Timer(clock=CLOCK)) as timer:
        assert "inherited" in vars(Handler)
        assert Handler().inherited() == "base"

    assert timer.calls["request"] == 1
    assert "inherited" not in vars(Handler)
    assert Handler().inherited() == "base"
