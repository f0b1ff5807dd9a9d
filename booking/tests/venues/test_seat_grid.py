from hypothesis import given, settings
from hypothesis import strategies as st

from booking.tests.factories import CATEGORIES
from booking.venues.layouts import parse_grid
from booking.venues.seat_grid import FREE, GAP, HELD, best_available, best_split, initial_states, orphans_created


def grid_of(text):
    layout = parse_grid(text, CATEGORIES)
    return layout, initial_states(layout)


def test_best_available_is_together_central_and_towards_the_front():
    layout, seats = grid_of("A: sssssssss\nB: sssssssss\nC: sssssssss\nD: sssssssss\nE: sssssssss")
    chosen = best_available(layout, seats, 3)
    assert chosen == [(1, 3), (1, 4), (1, 5)]


def test_best_available_never_spans_an_aisle():
    layout, seats = grid_of("A: ss.ss")
    assert best_available(layout, seats, 3) is None
    assert sorted(best_split(layout, seats, 3)) in ([(0, 0), (0, 1), (0, 3)], [(0, 0), (0, 3), (0, 4)])


def test_best_available_avoids_leaving_a_single_seat():
    layout, seats = grid_of("A: sssss")
    seats[0][0] = HELD
    # free run is seats 1..4 (4 seats); taking 3 in the middle-ish would strand one
    chosen = best_available(layout, seats, 3)
    assert chosen is not None
    assert chosen in ([(0, 1), (0, 2), (0, 3)], [(0, 2), (0, 3), (0, 4)])
    assert orphans_created(seats, chosen) == [] or len(orphans_created(seats, chosen)) == 1
    layout, seats = grid_of("A: ssssss")
    chosen = best_available(layout, seats, 2)
    assert chosen is not None
    assert not orphans_created(seats, chosen)


def test_orphan_rule_spots_a_seat_left_alone():
    _, seats = grid_of("A: ssss")
    assert orphans_created(seats, [(0, 1)]) == [(0, 0)]
    assert orphans_created(seats, [(0, 0)]) == []
    assert orphans_created(seats, [(0, 1), (0, 2)]) == [(0, 0), (0, 3)]


def test_category_filter():
    layout, seats = grid_of("A: pppp\nB: ssss")
    assert {layout["rows"][r]["cells"][c]["cat"] for r, c in best_available(layout, seats, 2, {"s"})} == {"s"}


@settings(max_examples=150, deadline=None)
@given(
    rows=st.lists(st.text(alphabet="ss.", min_size=1, max_size=20), min_size=1, max_size=8),
    taken=st.lists(st.tuples(st.integers(0, 7), st.integers(0, 19)), max_size=30),
    count=st.integers(1, 6),
)
def test_best_available_returns_free_adjacent_seats_in_one_row_or_none(rows, taken, count):
    text = "\n".join(rows)
    if "s" not in text:
        return
    layout, seats = grid_of(text)
    for r, c in taken:
        if r < len(seats) and c < len(seats[r]) and seats[r][c] == FREE:
            seats[r][c] = HELD
    chosen = best_available(layout, seats, count)
    if chosen is None:
        # then no row has `count` free seats side by side
        for row in seats:
            run = 0
            for state in row:
                run = run + 1 if state == FREE else 0
                assert run < count
        return
    assert len(chosen) == count
    assert len({r for r, _ in chosen}) == 1
    cols = [c for _, c in chosen]
    assert cols == list(range(cols[0], cols[0] + count))
    assert all(seats[r][c] == FREE and seats[r][c] != GAP for r, c in chosen)
