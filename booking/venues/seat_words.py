"""Seats in words, as a buyer reads them: "Row F, seats 14–17, Premium, €220"."""

from itertools import groupby

from django.utils.translation import gettext as _

from booking.core.domain import Session
from booking.core.formatting import format_money
from booking.core.localized import category_names


def describe_seats(session: Session, coords, *, price: int | None = None) -> str:
    """The seats (row, col) grouped by row into runs of neighbours, then their categories and
    their price together: ``price`` when given (what the cart charges, kinds chosen), else the
    full-price table's, as the map shows it."""
    layout = session["layout"]
    coords = sorted(coords)
    runs = []
    for r, cols in groupby(coords, key=lambda rc: rc[0]):
        row = layout["rows"][r]
        cols_list = [c for _r, c in cols]
        block = [cols_list[0]]
        for c in cols_list[1:]:
            if c == block[-1] + 1:
                block.append(c)
            else:
                runs.append(_run(row, block))
                block = [c]
        runs.append(_run(row, block))
    cells = [layout["rows"][r]["cells"][c] for r, c in coords]
    names = category_names(layout["categories"])
    categories = list(dict.fromkeys(names.get(cell["cat"], cell["cat"]) for cell in cells))
    total = price if price is not None else sum(session["prices"].get(cell["cat"], 0) for cell in cells)
    notes = []
    if any(cell.get("wheelchair") for cell in cells):
        notes.append(_("with wheelchair space"))
    return ", ".join(
        [_(" and ").join(runs), " / ".join(categories), *notes, format_money(total, session.get("currency"))]
    )


def _run(row: dict, cols: list[int]) -> str:
    first, last = row["cells"][cols[0]]["label"], row["cells"][cols[-1]]["label"]
    if len(cols) == 1:
        return _("Row %(row)s, seat %(seat)s") % {"row": row["label"], "seat": first}
    return _("Row %(row)s, seats %(first)s–%(last)s") % {"row": row["label"], "first": first, "last": last}
