"""scripts/url_map.py: the URL map in docs/architecture.md is the URLconf's, so a new URL, or a view
that starts or stops using a domain function, fails here until `make url-map` writes it."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "url_map.py"

_spec = importlib.util.spec_from_file_location("url_map", SCRIPT)
assert _spec is not None and _spec.loader is not None
url_map = importlib.util.module_from_spec(_spec)
sys.modules["url_map"] = url_map
_spec.loader.exec_module(url_map)


def test_the_url_map_in_the_architecture_doc_matches_the_urlconf(capsys):
    code = url_map.main(["--check"])
    assert code == 0, capsys.readouterr().out


def test_routes_are_shown_with_their_parameter_names_only():
    assert url_map.readable("sessions/<str:session_id>/toggle") == "sessions/<session_id>/toggle"
    assert url_map.readable(r"^tickets/(?P<code>[A-Za-z0-9_-]{16,64})\.svg$") == "tickets/<code>.svg"


def test_a_seat_click_names_the_hold_service_it_hands_on():
    rows = [line for line in url_map.table().splitlines() if line.startswith("| `/sessions/<session_id>/toggle`")]
    assert len(rows) == 1
    assert "`toggle_seat`" in rows[0]
    assert "`sales.holds.toggle_seat`" in rows[0]
