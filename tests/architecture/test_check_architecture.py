"""scripts/check_architecture.py on small package trees made for each rule, and on the repository
against its committed baseline (so CI holds the code to the rules through the test suite)."""

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check_architecture.py"

_spec = importlib.util.spec_from_file_location("check_architecture", SCRIPT)
assert _spec is not None and _spec.loader is not None
checker = importlib.util.module_from_spec(_spec)
sys.modules["check_architecture"] = checker  # dataclasses look their module up while being made
_spec.loader.exec_module(checker)


def tree(root: Path, files: dict[str, str]) -> Path:
    """booking/ with the given modules (and an empty __init__.py in every package on the way)."""
    for name, source in files.items():
        path = root / name
        for package in [path.parent, *path.parent.parents]:
            if package == root:
                break
            package.mkdir(parents=True, exist_ok=True)
            (package / "__init__.py").touch()
        path.write_text(textwrap.dedent(source))
    return root


def keys(root: Path) -> list[str]:
    return sorted(violation.key for violation in checker.check(root).violations)


def test_a_loop_closed_by_an_import_inside_a_function_is_reported(tmp_path):
    tree(
        tmp_path,
        {
            "booking/core/clock.py": "from booking.core import ids\n",
            "booking/core/ids.py": """\
                def new_id():
                    from booking.core import clock

                    return clock
            """,
        },
    )
    report = checker.check(tmp_path)
    assert sorted(violation.key for violation in report.violations) == [
        "function-import booking.core.ids -> booking.core.clock",
        "import-loop booking.core.clock -> booking.core.ids",
        "import-loop booking.core.ids -> booking.core.clock",
    ]
    assert report.loops == [
        (["booking.core.clock", "booking.core.ids"], ["booking.core.clock", "booking.core.ids", "booking.core.clock"])
    ]
    assert [str(violation) for violation in report.violations if violation.module == "booking.core.ids"] == [
        "booking/core/ids.py:2: function-import: booking.core.ids imports booking.core.clock inside a function "
        "(new_id)",
        "booking/core/ids.py:2: import-loop: booking.core.ids imports booking.core.clock, which leads back: "
        "booking.core.ids -> booking.core.clock -> booking.core.ids (a loop of 2 modules)",
    ]


def test_an_import_from_a_higher_layer_is_reported_and_downward_or_sideways_ones_are_not(tmp_path):
    tree(
        tmp_path,
        {
            "booking/core/clock.py": "from booking.web import live\n",
            "booking/web/live.py": "",
            "booking/venues/theaters.py": "from booking.core import clock\n",
            "booking/sales/carts.py": "from booking.venues import theaters\nfrom booking.payments import flow\n",
            "booking/payments/flow.py": "from booking.notifications import mails\n",
            "booking/notifications/mails.py": "",
            "booking/presale/views/pages.py": "from booking.sales import carts\nfrom booking.web import live\n",
        },
    )
    assert keys(tmp_path) == ["upward-import booking.core.clock -> booking.web.live"]


def test_the_audiences_do_not_import_each_other_but_share_what_lies_below(tmp_path):
    tree(
        tmp_path,
        {
            "booking/web/forms.py": "",
            "booking/presale/forms.py": "from booking.web import forms\n",
            "booking/presale/views/seatmap.py": "from booking.presale import forms\n",
            "booking/control/counter.py": "from booking.presale import forms\nfrom booking.web import forms as web\n",
            "booking/checkin/views.py": "",
            "booking/control/entries.py": "from booking.checkin.views import PERMISSION\n",
        },
    )
    assert keys(tmp_path) == [
        "sibling-import booking.control.counter -> booking.presale.forms",
        "sibling-import booking.control.entries -> booking.checkin.views",
    ]


def test_a_module_in_no_layer_is_reported_so_the_table_stays_complete(tmp_path):
    tree(tmp_path, {"booking/core/clock.py": "", "booking/stray.py": "from booking.core import clock\n"})
    assert keys(tmp_path) == ["unplaced booking.stray"]


def test_a_contextvar_below_the_web_layer_is_reported(tmp_path):
    tree(
        tmp_path,
        {
            "booking/sales/holds.py": """\
                from contextvars import ContextVar

                acting_client = ContextVar("acting_client", default=None)
            """,
            "booking/venues/theaters.py": "import contextvars\n\ncurrent = contextvars.ContextVar('current')\n",
            "booking/web/middleware.py": "from contextvars import ContextVar\n\nrequest = ContextVar('request')\n",
        },
    )
    assert keys(tmp_path) == [
        "contextvar booking.sales.holds -> ContextVar(acting_client)",
        "contextvar booking.sales.holds -> import contextvars",
        "contextvar booking.venues.theaters -> ContextVar(current)",
        "contextvar booking.venues.theaters -> import contextvars",
    ]


def test_another_modules_private_name_is_reported_however_it_is_reached(tmp_path):
    tree(
        tmp_path,
        {
            "booking/sales/__init__.py": "_SHARED = 1\n",
            "booking/sales/checkout.py": "def _store_order(): ...\ndef _new_order(): ...\ndef _audit(): ...\n",
            "booking/sales/carts.py": "from . import _SHARED\n",
            "booking/payments/flow.py": """\
                import booking.sales.checkout
                from booking.sales import checkout
                from booking.sales.checkout import _store_order

                def _own(): ...

                def pay():
                    _own()
                    checkout._new_order()
                    checkout._new_order()
                    booking.sales.checkout._audit()
                    return checkout.__name__, _store_order
            """,
        },
    )
    assert keys(tmp_path) == [
        "private-name booking.payments.flow -> booking.sales.checkout._audit",
        "private-name booking.payments.flow -> booking.sales.checkout._new_order",
        "private-name booking.payments.flow -> booking.sales.checkout._store_order",
        "private-name booking.sales.carts -> booking.sales._SHARED",
    ]


def test_relative_imports_and_imported_submodules_resolve_to_the_module(tmp_path):
    tree(
        tmp_path,
        {
            "booking/sales/__init__.py": "from .carts import Cart\n",
            "booking/sales/carts.py": """\
                from .. import venues
                from ..core import ids
                from . import holds
                from .holds import hold
                Cart = dict
            """,
            "booking/sales/holds.py": "def hold(): ...\n",
            "booking/venues/__init__.py": "",
            "booking/core/ids.py": "from ..web import live\n",
            "booking/web/live.py": "",
            "booking/presale/views/pages.py": "from ...sales import carts\nfrom ... import sales\n",
        },
    )
    imports = {
        name: sorted({imported.target for imported in module.imports})
        for name, module in checker.read(tmp_path).items()
        if module.imports
    }
    assert imports == {
        "booking.sales": ["booking.sales.carts"],
        "booking.sales.carts": ["booking.core.ids", "booking.sales.holds", "booking.venues"],
        "booking.core.ids": ["booking.web.live"],
        "booking.presale.views.pages": ["booking.sales", "booking.sales.carts"],
    }
    assert keys(tmp_path) == ["upward-import booking.core.ids -> booking.web.live"]


def test_imports_for_type_checking_make_no_loop_but_still_may_not_point_upward(tmp_path):
    tree(
        tmp_path,
        {
            "booking/sales/carts.py": "from booking.sales import orders\n",
            "booking/sales/orders.py": """\
                from typing import TYPE_CHECKING

                if TYPE_CHECKING:
                    from booking.sales.carts import Cart
                    from booking.web.live import Stream


                def total(cart: "Cart") -> int:
                    if TYPE_CHECKING:
                        from booking.sales import carts
                    return 0
            """,
            "booking/web/live.py": "",
        },
    )
    assert keys(tmp_path) == ["upward-import booking.sales.orders -> booking.web.live"]


def test_an_apps_ready_may_import_what_waits_for_the_app_registry(tmp_path):
    tree(
        tmp_path,
        {
            "booking/notifications/apps.py": """\
                class NotificationsConfig:
                    def ready(self):
                        from . import receivers
            """,
            "booking/notifications/receivers.py": "",
        },
    )
    assert keys(tmp_path) == []


def run(root: Path, *args: str) -> tuple[int, str]:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--root", str(root), *args], capture_output=True, text=True, check=False
    )
    return result.returncode, result.stdout + result.stderr


def test_the_check_fails_on_a_violation_beyond_the_baseline_and_on_one_gone_from_it(tmp_path):
    ids = tmp_path / "booking/core/ids.py"
    tree(
        tmp_path,
        {"booking/core/ids.py": "def new():\n    from booking.core import clock\n", "booking/core/clock.py": ""},
    )
    baseline = tmp_path / "scripts/architecture_baseline.txt"
    baseline.parent.mkdir()

    code, output = run(tmp_path)
    assert code == 1
    assert "booking/core/ids.py:2: function-import: booking.core.ids imports booking.core.clock" in output

    code, output = run(tmp_path, "--update-baseline")
    assert code == 0, output
    assert baseline.read_text().splitlines()[-1] == "function-import booking.core.ids -> booking.core.clock"

    ids.write_text("\n\n" + ids.read_text())  # lines move, the key stays
    code, output = run(tmp_path)
    assert code == 0, output

    ids.write_text(ids.read_text() + "def again():\n    from booking.core import clock\n")  # the same key twice
    code, output = run(tmp_path)
    assert code == 1
    assert "booking/core/ids.py:6: function-import:" in output

    ids.write_text("from booking.core import clock\n")
    code, output = run(tmp_path)
    assert code == 1
    assert (
        "scripts/architecture_baseline.txt: gone: function-import booking.core.ids -> booking.core.clock "
        "(fixed: run with --update-baseline so it cannot come back)"
    ) in output

    assert run(tmp_path, "--update-baseline")[0] == 0
    assert [line for line in baseline.read_text().splitlines() if not line.startswith("#")] == []


def test_the_repository_keeps_to_its_architecture_baseline():
    code, output = run(ROOT)
    assert code == 0, output
