"""Sectioned venues (stadiums) drawn as text in the admin: each section is a header line in
square brackets followed by its rows in the layout editor's own grid format (``layouts.parse_grid``)::

    [North 1]
    A: ssss.ssss
    B: ssss.ssss

    [North 2 | Nord 2]
    A: pppp

A German name for German pages may follow the name after a bar: ``[North 2 | Nord 2]``.
"""

import re
from collections.abc import Mapping, Sequence
from typing import Any

from django.utils.translation import gettext as _

from booking.core.domain import Section
from booking.core.errors import InvalidLayout
from booking.venues.layouts import layout_to_grid, parse_grid, validate_sections

HEADER = re.compile(r"^\s*\[(?P<name>[^\]]*)\]\s*$")


def parse_sections(text: str, categories: Sequence[Mapping[str, Any]]) -> list[Section]:
    """``[{name, layout}]`` from the text; InvalidLayout naming the section (and its row) when wrong."""
    sections: list[dict] = []  # {name, nameDe, lines, at}: the text of each, before it is parsed
    current: dict | None = None
    for number, line in enumerate(str(text or "").splitlines(), start=1):
        header = HEADER.match(line)
        if header:
            name, _bar, name_de = header["name"].partition("|")
            current = {"name": name.strip(), "nameDe": name_de.strip(), "lines": [], "at": number}
            sections.append(current)
        elif line.strip():
            if current is None:
                raise InvalidLayout(
                    _("Line %(n)d: start with a section name in brackets, e.g. [North 1].") % {"n": number}
                )
            current["lines"].append(line)
    if not sections:
        raise InvalidLayout(_("Give at least one section: a name in brackets, then its rows."))
    parsed = []
    for section in sections:
        try:
            layout = parse_grid("\n".join(section["lines"]), categories)
        except InvalidLayout as exc:
            raise InvalidLayout(
                _("Section “%(name)s”: %(error)s") % {"name": section["name"], "error": exc.message}
            ) from None
        parsed.append({"name": section["name"], "nameDe": section["nameDe"], "layout": layout})
    return validate_sections(parsed)


def sections_to_text(sections: list[Section]) -> str:
    return "\n".join(
        f"[{s['name']}{' | ' + s['nameDe'] if s.get('nameDe') else ''}]\n{layout_to_grid(s['layout']).rstrip()}\n"
        for s in sections
    )
