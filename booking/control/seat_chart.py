"""The staff's seat chart: a layout (editor preview) or a session (states and owners) turned into
rows of cells the admin templates draw without logic.

A view model, no HTML and no rules: the grid's rules are ``booking/venues/seat_grid.py``, the buyer's
seat map (HTML built in Python) is ``booking/web/seatmap_html.py``."""

from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from django.urls import reverse
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.translation import gettext, gettext_lazy

from booking.core.contrast import ink_on
from booking.core.domain import Layout, Session
from booking.core.formatting import seat_label
from booking.core.localized import category_names
from booking.venues.seat_grid import BLOCKED, FREE, GAP, HELD, SOLD, STATE_NAMES, seat_key

# A cell's state as its tooltip and a screen reader say it (STATE_NAMES are the CSS classes).
STATE_LABELS = {
    "free": gettext_lazy("free"),
    "held": gettext_lazy("held"),
    "sold": gettext_lazy("sold"),
    "blocked": gettext_lazy("house seat"),
}


@dataclass
class Cell:
    gap: bool
    key: str = ""
    label: str = ""
    cat: str = ""
    color: str = ""
    ink: str = ""  # the label's colour on ``color`` (black or white, AA contrast)
    wheelchair: bool = False
    released: bool = False  # a wheelchair space put on general sale before the show (sales/wheelchair.py)
    companion: bool = False
    state: str = ""
    owner: str = ""  # order ref or short cart id
    owner_url: str = ""
    title: str = ""
    selectable: bool = False  # free or blocked: staff can tick it to block / unblock
    checked: bool = False
    mine: bool = False  # the seat of the order being changed (the exchange page)


@dataclass
class Row:
    label: str
    cells: list[Cell]


def layout_rows(layout: Layout) -> list[Row]:
    colors = {c["code"]: c["color"] for c in layout["categories"]}
    names = category_names(layout["categories"])  # the staff's German names on German pages
    rows = []
    for row in layout["rows"]:
        cells = []
        for cell in row["cells"]:
            if cell is None:
                cells.append(Cell(gap=True))
                continue
            released = cell.get("releasedFrom") == "wheelchair"
            extra = (
                gettext(" (wheelchair space)")
                if cell.get("wheelchair")
                else gettext(" (wheelchair space, on general sale since %(when)s)")
                % {"when": date_format(timezone.localtime(cell["releasedOn"]), "j M H:i")}
                if released and cell.get("releasedOn")
                else gettext(" (companion seat)")
                if cell.get("companion")
                else ""
            )
            cells.append(
                Cell(
                    gap=False,
                    label=cell["label"],
                    cat=cell["cat"],
                    color=colors[cell["cat"]],
                    ink=ink_on(colors[cell["cat"]]),
                    wheelchair=bool(cell.get("wheelchair")),
                    released=released,
                    companion=bool(cell.get("companion")),
                    title=f"{seat_label(row['label'], cell['label'])}: {names[cell['cat']]}{extra}",
                )
            )
        rows.append(Row(label=row["label"], cells=cells))
    return rows


def category_legend(layout: Layout) -> list[dict]:
    counts: dict[str, int] = {}
    wheelchair = released = 0
    for row in layout["rows"]:
        for cell in row["cells"]:
            if cell is not None:
                counts[cell["cat"]] = counts.get(cell["cat"], 0) + 1
                wheelchair += bool(cell.get("wheelchair"))
                released += cell.get("releasedFrom") == "wheelchair"
    extra = []
    if wheelchair:
        extra.append({"code": "", "name": gettext("of which wheelchair spaces"), "color": "", "count": wheelchair})
    if released:
        name = gettext("wheelchair spaces now on general sale (dashed outline)")
        extra.append({"code": "", "name": name, "color": "", "count": released})
    return [
        {"code": c["code"], "name": c["name"], "color": c["color"], "count": counts.get(c["code"], 0)}
        for c in layout["categories"]
    ] + extra


def session_rows(session: Session, owners: dict[str, dict], checked: AbstractSet[str] = frozenset()) -> list[Row]:
    """The session's cells with their state; held seats name their cart, sold ones their order."""
    rows = layout_rows(session["layout"])
    for r, row in enumerate(rows):
        for c, cell in enumerate(row.cells):
            state = session["seats"][r][c]
            if state == GAP:
                continue
            key = seat_key(r, c)
            cell.key = key
            cell.state = STATE_NAMES.get(state, "?")
            cell.selectable = state in (FREE, BLOCKED)
            cell.checked = cell.selectable and key in checked
            owner = owners.get(key, {})
            if state == SOLD and "order" in owner:
                cell.owner = owner["order"]
                cell.owner_url = reverse("admin:booking_order_change", args=[str(owner["orderId"])])
                cell.title += gettext(": sold, order %(ref)s (%(name)s)") % {
                    "ref": owner["order"],
                    "name": owner.get("name", ""),
                }
            elif state == HELD and "cart" in owner:
                cell.owner = str(owner["cart"])[-6:]
                cell.owner_url = reverse("admin:booking_cart_change", args=[str(owner["cart"])])
                cell.title += gettext(": held in cart %(cart)s") % {"cart": owner["cart"]}
            else:
                cell.title += f": {STATE_LABELS.get(cell.state, cell.state)}"
    return rows


def owner_groups(rows: list[Row]) -> list[dict]:
    """Who holds or bought which seats, one line per order or cart (in the map's order): the map's
    cells stay one seat wide and link to their owner; the references are listed here instead."""
    groups: dict[str, dict] = {}
    for row in rows:
        for cell in row.cells:
            if not cell.owner:
                continue
            group = groups.setdefault(
                cell.owner_url,
                {"label": cell.owner, "url": cell.owner_url, "sold": cell.state == STATE_NAMES[SOLD], "seats": []},
            )
            group["seats"].append(seat_label(row.label, cell.label))
    return list(groups.values())


def grid_error_context(text: str, row: int | None, column: int | None) -> dict | None:
    """The line of the text grid an error points at, split around the bad character so the
    template can mark it. Mirrors how layouts.parse_grid counts rows (blank edges dropped) and
    columns (after "A: ")."""
    if row is None:
        return None
    lines = [line.rstrip("\r") for line in text.split("\n")]
    while lines and not lines[-1].strip():
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    if not 0 <= row < len(lines):
        return None
    line = lines[row]
    offset = 0
    if ":" in line and line.split(":", 1)[0].strip().isalnum() and len(line.split(":", 1)[0].strip()) <= 4:
        offset = line.index(":") + 1
        if line[offset : offset + 1] == " ":
            offset += 1
    if column is None:
        return {"row": row + 1, "column": None, "before": line, "bad": "", "after": ""}
    at = offset + column
    return {
        "row": row + 1,
        "column": column + 1,
        "before": line[:at],
        "bad": line[at : at + 1] or " ",
        "after": line[at + 1 :],
    }
