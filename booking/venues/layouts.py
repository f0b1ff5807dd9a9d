"""Theater layouts: validation, the text-grid format staff draw in, and JSON import/export.

A layout is rows of cells, front row (nearest the stage) first. A cell is None (a gap: aisle,
pillar, nothing) or a seat: ``{"label": "12", "cat": "p"}`` plus ``"wheelchair": True`` or
``"companion": True`` when set. Categories are ``{"code": "p", "name": "Premium"}``; codes are
single lowercase letters so the text grid can show one character per cell.

Text grid, one line per row: ``A: sss..ssss`` where a lowercase letter is a seat of that
category, the same letter in upper case is a wheelchair space of that category, and ``.``,
``_`` or a space is a gap. The seats directly beside a wheelchair space are its companion seats.
The row label before ``:`` is optional (rows are then labelled A, B, C ...). Seats are numbered
1, 2, 3 ... from the left, skipping gaps.
"""

import re
import string
from collections.abc import Mapping, Sequence
from typing import Any

from django.utils.translation import gettext

from booking.core.domain import Category, Cell, Layout, Row, Section
from booking.core.errors import InvalidLayout
from booking.core.formatting import thousands

MAX_ROWS = 300
MAX_CELLS_PER_ROW = 400
MAX_SEATS = 20_000  # keeps one session document far below MongoDB's 16 MB (about 1.5 MB here)
GAP_CHARS = {".", "_", " "}
_ROW_LINE = re.compile(r"^\s*([A-Za-z0-9]{1,4})\s*:(.*)$")
_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 \-]{0,7}$")

DEFAULT_CATEGORY_COLORS = ["#3b82f6", "#a855f7", "#10b981", "#f59e0b", "#ef4444", "#14b8a6"]


def auto_row_label(index: int) -> str:
    """A, B, ..., Z, AA, AB, ... like most halls."""
    letters = string.ascii_uppercase
    label = ""
    index += 1
    while index:
        index, rem = divmod(index - 1, 26)
        label = letters[rem] + label
    return label


def validate_categories(categories) -> list[Category]:
    if not isinstance(categories, list) or not categories:
        raise InvalidLayout(gettext("Give at least one seat category."))
    clean: list[Category] = []
    seen = set()
    for i, cat in enumerate(categories):
        if not isinstance(cat, dict):
            raise InvalidLayout(
                gettext("Category %(number)s must be an object with a code and a name.") % {"number": i + 1}
            )
        code = cat.get("code")
        name = str(cat.get("name", "")).strip()
        if not isinstance(code, str) or len(code) != 1 or code not in string.ascii_lowercase:
            raise InvalidLayout(
                gettext("Category %(number)s: the code must be one lowercase letter (a-z).") % {"number": i + 1}
            )
        if code in seen:
            raise InvalidLayout(gettext("Category code '%(code)s' is used twice.") % {"code": code})
        if not name or len(name) > 40:
            raise InvalidLayout(gettext("Category '%(code)s' needs a name of 1 to 40 characters.") % {"code": code})
        seen.add(code)
        color = cat.get("color") or DEFAULT_CATEGORY_COLORS[i % len(DEFAULT_CATEGORY_COLORS)]
        if not re.fullmatch(r"#[0-9a-fA-F]{6}", str(color)):
            raise InvalidLayout(gettext("Category '%(code)s': the colour must look like #3b82f6.") % {"code": code})
        name_de = str(cat.get("nameDe") or "").strip()  # German pages show it (booking/core/localized.py)
        if len(name_de) > 40:
            raise InvalidLayout(
                gettext("Category '%(code)s': keep the German name under 40 characters.") % {"code": code}
            )
        category: Category = {"code": code, "name": name, "color": color}
        if name_de:
            category["nameDe"] = name_de
        clean.append(category)
    return clean


def parse_grid(text: str, categories: Sequence[Mapping[str, Any]]) -> Layout:
    """Turn the staff's text grid into a validated layout; errors point at row and column."""
    categories = validate_categories(categories)
    codes = {c["code"] for c in categories}
    lines = [line.rstrip("\r") for line in text.split("\n")]
    while lines and not lines[-1].strip():
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    rows = []
    for row_index, line in enumerate(lines):
        match = _ROW_LINE.match(line)
        label, body = (match.group(1), match.group(2)) if match else (auto_row_label(row_index), line)
        body = body.rstrip()
        if body.startswith(" "):
            body = body[1:]  # "A: sss" - the space after the colon is not a gap
        cells: list[dict | None] = []
        for col, char in enumerate(body):
            if char in GAP_CHARS:
                cells.append(None)
            elif char in codes:
                cells.append({"cat": char})
            elif char.lower() in codes and char.isupper():
                cells.append({"cat": char.lower(), "wheelchair": True})
            else:
                raise InvalidLayout(
                    gettext(
                        "'%(char)s' is not a seat category (%(codes)s), its upper case (wheelchair space) or '.' (gap)."
                    )
                    % {"char": char, "codes": ", ".join(sorted(codes))},
                    row=row_index,
                    column=col,
                )
        rows.append({"label": label, "cells": cells})
    _number_seats(rows)
    _mark_companions(rows)
    return validate_layout({"categories": categories, "rows": rows})


def _number_seats(rows: list[dict]) -> None:
    for row in rows:
        number = 0
        for cell in row["cells"]:
            if cell is not None:
                number += 1
                cell["label"] = str(number)


def _mark_companions(rows: list[dict]) -> None:
    for row in rows:
        cells = row["cells"]
        for i, cell in enumerate(cells):
            if cell is None or cell.get("wheelchair"):
                continue
            neighbours = [cells[j] for j in (i - 1, i + 1) if 0 <= j < len(cells)]
            if any(n is not None and n.get("wheelchair") for n in neighbours):
                cell["companion"] = True


def layout_to_grid(layout: Layout) -> str:
    lines = []
    for row in layout["rows"]:
        chars = []
        for cell in row["cells"]:
            if cell is None:
                chars.append(".")
            elif cell.get("wheelchair"):
                chars.append(cell["cat"].upper())
            else:
                chars.append(cell["cat"])
        lines.append(f"{row['label']}: {''.join(chars)}")
    return "\n".join(lines)


def validate_layout(layout) -> Layout:
    """Check a layout (from the grid or imported JSON) and return a clean copy."""
    if not isinstance(layout, dict):
        raise InvalidLayout(gettext("A layout must be an object with 'categories' and 'rows'."))
    categories = validate_categories(layout.get("categories"))
    codes = {c["code"] for c in categories}
    rows = layout.get("rows")
    if not isinstance(rows, list) or not rows:
        raise InvalidLayout(gettext("A layout needs at least one row."))
    if len(rows) > MAX_ROWS:
        raise InvalidLayout(
            gettext("A layout may have at most %(MAX_ROWS)s rows; this one has %(count)s.")
            % {"MAX_ROWS": MAX_ROWS, "count": len(rows)}
        )
    clean_rows: list[Row] = []
    row_labels = set()
    seats = 0
    for r, row in enumerate(rows):
        if not isinstance(row, dict) or not isinstance(row.get("cells"), list):
            raise InvalidLayout(gettext("Each row needs a label and a list of cells."), row=r)
        label = str(row.get("label", "")).strip()
        if not _LABEL.match(label):
            raise InvalidLayout(
                gettext("Row label '%(label)s' must be 1-8 letters or digits.") % {"label": label}, row=r
            )
        if label in row_labels:
            raise InvalidLayout(gettext("Row label '%(label)s' is used twice.") % {"label": label}, row=r)
        row_labels.add(label)
        cells = row["cells"]
        if len(cells) > MAX_CELLS_PER_ROW:
            raise InvalidLayout(
                gettext("A row may have at most %(MAX_CELLS_PER_ROW)s cells.")
                % {"MAX_CELLS_PER_ROW": MAX_CELLS_PER_ROW},
                row=r,
            )
        seat_labels = set()
        clean_cells: list[Cell | None] = []
        for c, cell in enumerate(cells):
            if cell is None:
                clean_cells.append(None)
                continue
            if not isinstance(cell, dict):
                raise InvalidLayout(gettext("A cell is either null (a gap) or a seat object."), row=r, column=c)
            seat_label = str(cell.get("label", "")).strip()
            if not _LABEL.match(seat_label):
                raise InvalidLayout(
                    gettext("Seat label '%(seat_label)s' must be 1-8 letters or digits.") % {"seat_label": seat_label},
                    row=r,
                    column=c,
                )
            if seat_label in seat_labels:
                raise InvalidLayout(
                    gettext("Seat %(seat_label)s appears twice in row %(label)s.")
                    % {"seat_label": seat_label, "label": label},
                    row=r,
                    column=c,
                )
            seat_labels.add(seat_label)
            cat = cell.get("cat")
            if not isinstance(cat, str):
                raise InvalidLayout(
                    gettext("Seat %(seat_label)s has no category letter.") % {"seat_label": seat_label}, row=r, column=c
                )
            if cat not in codes:
                raise InvalidLayout(
                    gettext("Seat %(seat)s has an unknown category '%(category)s'.")
                    % {"seat": seat_label, "category": cat[:10]},
                    row=r,
                    column=c,
                )
            clean: Cell = {"label": seat_label, "cat": cell["cat"]}
            if cell.get("wheelchair"):
                clean["wheelchair"] = True
            if cell.get("companion"):
                clean["companion"] = True
            clean_cells.append(clean)
            seats += 1
        clean_rows.append({"label": label, "cells": clean_cells})
    if seats == 0:
        raise InvalidLayout(gettext("A layout needs at least one seat."))
    if seats > MAX_SEATS:
        raise InvalidLayout(
            gettext("A layout may have at most %(MAX_SEATS)s seats; this one has %(seats)s.")
            % {"MAX_SEATS": MAX_SEATS, "seats": seats}
        )
    return {"categories": categories, "rows": clean_rows}


def seat_count(layout: Layout) -> int:
    return sum(1 for row in layout["rows"] for cell in row["cells"] if cell is not None)


def category_codes_used(layout: Layout) -> list[str]:
    used = {cell["cat"] for row in layout["rows"] for cell in row["cells"] if cell is not None}
    return [c["code"] for c in layout["categories"] if c["code"] in used]


# --- Sectioned venues: a stadium is sections, each an ordinary layout (one session document each) ---

MAX_SECTIONS = 200
MAX_VENUE_SEATS = 250_000
_SECTION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 .\-]{0,39}$")
_SECTION_NAME_DE = re.compile(r"^[^\W_](?:[^\W_]|[ .\-]){0,39}$")  # as _SECTION_NAME, umlauts too


def validate_sections(sections) -> list[Section]:
    """``[{"name": "North 1", "layout": {...}}, ...]`` -> a clean copy. Each section is checked as a
    layout of its own (so each stays within one document's limits); names are unique."""
    if not isinstance(sections, list) or not sections:
        raise InvalidLayout(gettext("A sectioned venue needs at least one section."))
    if len(sections) > MAX_SECTIONS:
        raise InvalidLayout(
            gettext("A venue may have at most %(MAX_SECTIONS)s sections; this one has %(count)s.")
            % {"MAX_SECTIONS": MAX_SECTIONS, "count": len(sections)}
        )
    clean: list[Section] = []
    names, total = set(), 0
    for i, section in enumerate(sections):
        if not isinstance(section, dict):
            raise InvalidLayout(
                gettext("Section %(number)s must be an object with a name and a layout.") % {"number": i + 1}
            )
        name = " ".join(str(section.get("name", "")).split())
        if not _SECTION_NAME.match(name):
            raise InvalidLayout(
                gettext("Section %(number)s: the name must be 1-40 letters, digits, spaces, dots or dashes.")
                % {"number": i + 1}
            )
        if name in names:
            raise InvalidLayout(gettext("Section name '%(name)s' is used twice.") % {"name": name})
        names.add(name)
        name_de = " ".join(str(section.get("nameDe") or "").split())  # German pages show it (booking/core/localized.py)
        if name_de and not _SECTION_NAME_DE.match(name_de):
            raise InvalidLayout(
                gettext("Section %(number)s: the German name must be 1-40 letters, digits, spaces, dots or dashes.")
                % {"number": i + 1}
            )
        try:
            layout = validate_layout(section.get("layout"))
        except InvalidLayout as exc:
            raise InvalidLayout(
                gettext("Section %(name)s: %(message)s") % {"name": name, "message": exc.message}
            ) from None
        total += seat_count(layout)
        clean_section: Section = {"name": name, "layout": layout}
        if name_de:
            clean_section["nameDe"] = name_de
        clean.append(clean_section)
    if total > MAX_VENUE_SEATS:
        raise InvalidLayout(
            gettext("A venue may have at most %(max)s seats; this one has %(total)s.")
            % {"max": thousands(MAX_VENUE_SEATS), "total": thousands(total)}
        )
    return clean
