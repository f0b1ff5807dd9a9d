import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from booking.core.errors import InvalidLayout
from booking.tests.factories import CATEGORIES
from booking.venues.layouts import auto_row_label, layout_to_grid, parse_grid, seat_count, validate_layout


def test_grid_rows_of_different_lengths_with_gaps_and_wheelchair_spaces():
    layout = parse_grid("A: ss.ss\nB: Sss.sssp\nC: s", CATEGORIES)
    assert [r["label"] for r in layout["rows"]] == ["A", "B", "C"]
    assert [len(r["cells"]) for r in layout["rows"]] == [5, 8, 1]
    assert layout["rows"][0]["cells"][2] is None
    assert [c["label"] for c in layout["rows"][0]["cells"] if c] == ["1", "2", "3", "4"]
    wheelchair, companion = layout["rows"][1]["cells"][0], layout["rows"][1]["cells"][1]
    assert wheelchair["wheelchair"] and wheelchair["cat"] == "s"
    assert companion["companion"] and not companion.get("wheelchair")
    assert layout["rows"][1]["cells"][7]["cat"] == "p"
    assert seat_count(layout) == 4 + 7 + 1


def test_rows_are_labelled_automatically_without_a_prefix():
    layout = parse_grid("sss\nsss", CATEGORIES)
    assert [r["label"] for r in layout["rows"]] == ["A", "B"]
    assert auto_row_label(26) == "AA"


@pytest.mark.parametrize(
    "grid, message",
    [
        ("A: ssx", "Row 1, column 3"),
        ("A: ...\nB: ..", "at least one seat"),
        ("A: ss\nA: ss", "used twice"),
        ("", "at least one row"),
    ],
)
def test_bad_grids_are_refused_with_the_place_of_the_error(grid, message):
    with pytest.raises(InvalidLayout) as exc:
        parse_grid(grid, CATEGORIES)
    assert message in exc.value.message


def test_layout_survives_json_export_and_import():
    layout = parse_grid("A: Ss.pp\nB: ssss", CATEGORIES)
    assert validate_layout(json.loads(json.dumps(layout))) == layout


def test_duplicate_seat_labels_in_json_are_refused():
    layout = parse_grid("A: ss", CATEGORIES)
    layout["rows"][0]["cells"][1]["label"] = "1"
    with pytest.raises(InvalidLayout, match="appears twice"):
        validate_layout(layout)


row_text = st.text(alphabet="sSpP.", min_size=1, max_size=30)


@settings(max_examples=200, deadline=None)
@given(st.lists(row_text, min_size=1, max_size=12))
def test_any_grid_either_parses_and_round_trips_or_says_why(rows):
    grid = "\n".join(rows)
    try:
        layout = parse_grid(grid, CATEGORIES)
    except InvalidLayout as exc:
        assert "seat" in exc.message
        assert all(set(r) <= {"."} for r in rows)
        return
    assert seat_count(layout) == sum(ch != "." for r in rows for ch in r)
    assert parse_grid(layout_to_grid(layout), CATEGORIES) == layout
    for row in layout["rows"]:
        labels = [c["label"] for c in row["cells"] if c]
        assert labels == [str(i) for i in range(1, len(labels) + 1)]
