"""The seat grid's rules, pure functions and no HTML: cell states, seat keys, the orphan rule,
best available.

``seats`` is the session's 2-D array of cell states, one list per row, aligned with the layout.
Three modules deal with seat maps; this is the one the engine uses. The buyer's map as HTML is
``booking/web/seatmap_html.py``; the staff's seat chart (a view model for the admin templates) is
``booking/control/seat_chart.py``.
"""

from collections.abc import Iterable

from booking.core.domain import Cell, Layout
from booking.core.formatting import seat_label

GAP = -1
FREE = 0
HELD = 1
SOLD = 2
BLOCKED = 3  # house seats, taken off sale by staff

STATE_NAMES = {FREE: "free", HELD: "held", SOLD: "sold", BLOCKED: "blocked"}


def seat_key(row: int, col: int) -> str:
    return f"{row}:{col}"


def parse_seat_key(key) -> tuple[int, int]:
    """'3:12' -> (3, 12); raises ValueError on anything else."""
    if not isinstance(key, str) or key.count(":") != 1 or len(key) > 12:
        raise ValueError(f"not a seat key: {key!r}")
    row, col = key.split(":")
    if not (row.isdigit() and col.isdigit()):
        raise ValueError(f"not a seat key: {key!r}")
    return int(row), int(col)


def cell_path(row: int, col: int) -> str:
    return f"seats.{row}.{col}"


def initial_states(layout: Layout) -> list[list[int]]:
    return [[GAP if cell is None else FREE for cell in row["cells"]] for row in layout["rows"]]


def restored_states(layout: Layout, sold: Iterable[str] | None = None) -> list[list[int]]:
    """A grid for a session whose grid was compacted after the show (sales/retention.py): the
    seats in ``sold`` (keys, from the paid orders) sold and the others free; with ``sold`` None
    every seat shows as sold (nothing is for sale any more)."""
    if sold is None:
        return [[GAP if cell is None else SOLD for cell in row["cells"]] for row in layout["rows"]]
    grid = initial_states(layout)
    for key in sold:
        row, col = parse_seat_key(key)
        grid[row][col] = SOLD
    return grid


def count_state(seats: list[list[int]], state: int) -> int:
    return sum(row.count(state) for row in seats)


def seat_at(layout: Layout, row: int, col: int) -> Cell:
    """The seat at a position already checked to be one (a gap there is a bug, not bad input)."""
    cell = layout["rows"][row]["cells"][col]
    if cell is None:
        raise LookupError(f"no seat at {row}:{col}")
    return cell


def seat_cell(layout: Layout, row: int, col: int) -> Cell | None:
    rows = layout["rows"]
    if not (0 <= row < len(rows)):
        return None
    cells = rows[row]["cells"]
    if not (0 <= col < len(cells)):
        return None
    return cells[col]


def seat_name(layout: Layout, row: int, col: int) -> str:
    cell = seat_cell(layout, row, col)
    label = cell["label"] if cell else str(col + 1)
    return seat_label(layout["rows"][row]["label"], label)


def orphans_created(seats: list[list[int]], taking: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Free seats that would be left alone (no free neighbour in the row) by taking these seats.

    A seat counts as alone when both sides are a taken seat, a gap or the row's end, and it had a
    free neighbour before. Only seats beside the ones being taken are looked at.
    """
    taking = set(taking)
    alone = []
    for row, col in taking:
        cells = seats[row]
        for neighbour in (col - 1, col + 1):
            if not (0 <= neighbour < len(cells)) or (row, neighbour) in taking or cells[neighbour] != FREE:
                continue
            left_free = _free_after(cells, row, neighbour - 1, taking)
            right_free = _free_after(cells, row, neighbour + 1, taking)
            if not left_free and not right_free and (row, neighbour) not in alone:
                alone.append((row, neighbour))
    return sorted(alone)


def _free_after(cells: list[int], row: int, col: int, taking: set) -> bool:
    return 0 <= col < len(cells) and cells[col] == FREE and (row, col) not in taking


def best_available(
    layout: Layout,
    seats: list[list[int]],
    count: int,
    categories: set[str] | None = None,
) -> list[tuple[int, int]] | None:
    """The best ``count`` free seats side by side in one row, or None when no row has them.

    Best means closest to the focal point (the centre of the hall, a little towards the stage),
    and never leaving a single seat alone when another choice does not.
    """
    focal_row, focal_col = _focal_point(seats)
    best = None
    best_score = None
    for row, cells in enumerate(seats):
        for start, end in _free_runs(layout, cells, row, categories):
            length = end - start
            if length < count:
                continue
            for left in range(start, end - count + 1):
                right = left + count  # exclusive
                leaves_orphan = (left - start == 1) or (end - right == 1)
                centre = (left + right - 1) / 2
                score = (leaves_orphan, abs(centre - focal_col) + 1.6 * abs(row - focal_row), row, left)
                if best_score is None or score < best_score:
                    best_score = score
                    best = [(row, col) for col in range(left, right)]
    return best


def best_split(
    layout: Layout,
    seats: list[list[int]],
    count: int,
    categories: set[str] | None = None,
) -> list[tuple[int, int]]:
    """When no row has ``count`` seats together: the fewest, closest groups that add up to it."""
    chosen: list[tuple[int, int]] = []
    remaining = count
    grid = [list(r) for r in seats]
    while remaining > 0:
        size = remaining
        group = None
        while size > 0 and group is None:
            group = best_available(layout, grid, size, categories)
            if group is None:
                size -= 1
        if group is None:
            return []
        for row, col in group:
            grid[row][col] = HELD
        chosen.extend(group)
        remaining -= len(group)
    return chosen


def _free_runs(layout: Layout, cells: list[int], row: int, categories: set[str] | None):
    """(start, end) ranges of consecutive free seats of an allowed category in one row. Wheelchair
    spaces are not among them: they are held for buyers who say they need one (best_wheelchair)."""
    layout_cells = layout["rows"][row]["cells"]
    start = None
    for col, state in enumerate(cells + [GAP]):
        ok = (
            state == FREE
            and (cell := layout_cells[col]) is not None
            and not cell.get("wheelchair")
            and (categories is None or cell["cat"] in categories)
        )
        if ok and start is None:
            start = col
        elif not ok and start is not None:
            yield start, col
            start = None


def _focal_point(seats: list[list[int]]) -> tuple[float, float]:
    widest = max(len(r) for r in seats)
    return (len(seats) - 1) * 0.35, (widest - 1) / 2


def longest_block(layout: Layout, categories: set[str] | None = None) -> int:
    """The most seats side by side anywhere in the hall (whatever their state now): when it is
    shorter than what the buyer asks for, no sale could ever give them that block."""
    longest = 0
    for row, cells in enumerate(initial_states(layout)):
        for start, end in _free_runs(layout, cells, row, categories):
            longest = max(longest, end - start)
    return longest


def best_wheelchair(
    layout: Layout, seats: list[list[int]], spaces: int, categories: set[str] | None = None
) -> list[tuple[int, int]] | None:
    """``spaces`` free wheelchair spaces, each with one free companion seat beside it, closest to
    the focal point; None when the hall has not that many left."""
    focal_row, focal_col = _focal_point(seats)
    candidates = []
    for row, cells in enumerate(seats):
        layout_cells = layout["rows"][row]["cells"]
        for col, state in enumerate(cells):
            cell = layout_cells[col] if col < len(layout_cells) else None
            if state != FREE or not cell or not cell.get("wheelchair"):
                continue
            if categories is not None and cell["cat"] not in categories:
                continue
            companions = [
                (row, n)
                for n in (col - 1, col + 1)
                if 0 <= n < len(cells)
                and cells[n] == FREE
                and (neighbour := layout_cells[n])
                and neighbour.get("companion")
            ]
            if companions:
                distance = abs(col - focal_col) + 1.6 * abs(row - focal_row)
                candidates.append((distance, row, col, companions))
    chosen: list[tuple[int, int]] = []
    taken: set[tuple[int, int]] = set()
    for _distance, row, col, companions in sorted(candidates):
        companion = next((c for c in companions if c not in taken), None)
        if companion is None:
            continue
        chosen += [(row, col), companion]
        taken |= {(row, col), companion}
        if len(chosen) == 2 * spaces:
            return sorted(chosen)
    return None


def takeable_seats(layout: Layout, seats: list[list[int]]) -> int:
    """How many free seats some buyer could still take: every free seat of the ordinary runs (a
    buyer asking for that run's length takes it whole, so the orphan rule refuses none of them),
    and each free wheelchair space with a free companion seat beside it. A wheelchair space whose
    companions are all taken fits nobody's wish."""
    takeable = 0
    for row, cells in enumerate(seats):
        layout_cells = layout["rows"][row]["cells"] if row < len(layout["rows"]) else []
        for col, state in enumerate(cells):
            cell = layout_cells[col] if col < len(layout_cells) else None
            if state != FREE or cell is None:
                continue
            if not cell.get("wheelchair"):
                takeable += 1
                continue
            takeable += any(
                0 <= n < len(cells) and cells[n] == FREE and (other := layout_cells[n]) and other.get("companion")
                for n in (col - 1, col + 1)
            )
    return takeable


def has_wheelchair_spaces(layout: Layout) -> bool:
    return any(cell and cell.get("wheelchair") for row in layout["rows"] for cell in row["cells"])
