"""The buyer's seat map as HTML, built in Python because it is the hottest page part.

(The grid's rules are ``booking/venues/seat_grid.py``; the staff's seat chart is
``booking/control/seat_chart.py``.)

A 900-seat hall through a template loop costs tens of milliseconds; here one pass over compact
data builds the HTML, labels are escaped once each, and the result is kept per (session, version):
every viewer of an unchanged session shares it. Only the seats held by the viewer differ between
viewers, and they are few, so the shared HTML is kept in chunks where every held seat is a chunk of
its own and a viewer's copy swaps in their "held by you" variants. A new version reuses the HTML of
every row whose cell states did not change (a hold changes one row): 0.25 ms instead of 3.3 ms for
900 seats.

Each seat is a real ``<button name="seat" value="r:c">`` inside the map's form, so a click works
as a plain form post without JavaScript and as an htmx post with it.
"""

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.utils.translation import get_language, gettext, gettext_noop

from booking.core.contrast import ink_on
from booking.core.domain import Layout, SessionStatus
from booking.core.formatting import escape, format_money, seat_label
from booking.core.localized import category_names, ticket_type_name
from booking.core.lru import LRUCache
from booking.sales import offers
from booking.venues.seat_grid import BLOCKED, FREE, GAP, HELD, SOLD, has_wheelchair_spaces

STATE_WORDS = {
    FREE: gettext_noop("available"),
    HELD: gettext_noop("held by someone else"),
    SOLD: gettext_noop("sold"),
    BLOCKED: gettext_noop("not for sale"),
}
STATE_CLASSES = {FREE: "", HELD: " h", SOLD: " x", BLOCKED: " x"}
MINE_WORDS = gettext_noop("held by you")
HOUSE_WORDS = gettext_noop("house seat, blocked: staff may sell it")  # the counter's map (booking/control/counter.py)

CACHE_SIZE = 64
_SAFE_CSS = re.compile(
    r"^\.c-[a-z]\{--cat:#[0-9a-fA-F]{6};--on-cat:#[0-9a-f]{6}\}$"
)  # layouts are validated; belt and braces
OFF_SALE_WORDS = gettext_noop("not on sale")  # every free seat of a canceled performance


@lru_cache(maxsize=8)
def _words(language: str) -> dict:
    """The seat buttons' words in ``language`` (the active one), looked up once per language: the
    map is built per language (``_maps``), and a lookup per seat would cost more than the seat."""
    return {
        **{state: gettext(text) for state, text in STATE_WORDS.items()},
        "mine": gettext(MINE_WORDS),
        "off_sale": gettext(OFF_SALE_WORDS),
        "house": gettext(HOUSE_WORDS),
        "wheelchair": gettext(", wheelchair space"),
        "companion": gettext(", companion seat"),
    }


@dataclass(frozen=True)
class SeatMapHtml:
    """The shared HTML of one session version, ready for a viewer's overlay."""

    version: int
    chunks: tuple[str, ...]
    # seat key -> (chunk index, html of that seat when it is the viewer's own)
    held: dict[str, tuple[int, str]]
    width: int  # cells in the widest row, for the map's CSS width
    wheelchair: bool = False  # the hall has wheelchair spaces (best available offers them)

    def for_viewer(self, mine: set[str] | frozenset = frozenset(), picked: set[str] | frozenset = frozenset()) -> str:
        """The map for one viewer: their held seats shown as theirs, ``picked`` ones highlighted."""
        if not mine:
            return "".join(self.chunks)
        chunks = list(self.chunks)
        for key in mine:
            found = self.held.get(key)
            if found is None:
                continue  # not held on this version of the map (a race): show what the map says
            index, html = found
            chunks[index] = html.replace('class="s me', 'class="s me pk', 1) if key in picked else html
        return "".join(chunks)


# (session id, version, language) -> its map: seat names and prices are written in the viewer's language
_maps: LRUCache[tuple, SeatMapHtml] = LRUCache(CACHE_SIZE)
# Per session: the HTML of each row as last built, keyed by (row index, the row's cell states).
# A hold changes one row, so a new version re-renders that row and reuses the others.
_row_memos: LRUCache[object, "_RowMemo"] = LRUCache(CACHE_SIZE)
stats = {"rows_built": 0}  # for tests: how many rows were rendered (not reused)


@dataclass(frozen=True)
class _RowMemo:
    signature: tuple  # what every row's HTML depends on besides its layout row and states
    layout_rows: list  # the layout rows the memo was built from (compared when a new read arrives)
    rows: dict  # (row index, states tuple) -> (parts, held); never changed once kept


def seat_map_html(session: Mapping[str, Any], *, house: bool = False) -> SeatMapHtml:  # a Session, or its head
    """The shared map of this session version, built once per process, version and language.
    ``house``: the counter's map, where staff may choose blocked (house) seats."""
    key = (session["_id"], session["version"], get_language(), "house" if house else "")
    return _maps.get_or_build(key, lambda: _build_reusing_rows(session, house))


def cached_seat_map(session_id, version: int, *, house: bool = False) -> SeatMapHtml | None:
    """The shared map of this version if this process has built it, else None (nothing is read)."""
    return _maps.get((session_id, version, get_language(), "house" if house else ""))


def clear_cache() -> None:
    _maps.clear()
    _row_memos.clear()
    _pages.clear()


def build_seat_map(session: Mapping[str, Any]) -> SeatMapHtml:
    """Build the whole map from scratch (no reuse of earlier rows)."""
    return _build(session, _signature(session), {})[0]


def _categories(layout: Layout, prices: dict, currency: str | None) -> tuple:
    """(code, escaped name, price) of every category, as every seat's label shows them."""
    names = category_names(layout["categories"])  # in the page's language (the map is cached per language)
    return tuple((code, escape(name), format_money(prices.get(code), currency)) for code, name in names.items())


def _signature(session: Mapping[str, Any]) -> tuple:
    layout = session["layout"]
    categories = _categories(layout, session["prices"], session.get("currency"))
    width = max((len(r["cells"]) for r in layout["rows"]), default=0)
    return categories, width, session.get("status") == SessionStatus.CANCELED


def _build_reusing_rows(session: Mapping[str, Any], house: bool = False) -> SeatMapHtml:
    """Build the map reusing the rows this process last built for the session, unless the
    layout, names, prices or width changed since; then keep this version's rows for the next."""
    signature = _signature(session)
    layout_rows = session["layout"]["rows"]
    memo_id = (session["_id"], get_language(), "house" if house else "")  # a row's words are its language's
    memo = _row_memos.get(memo_id)
    earlier: dict = {}
    if (
        memo is not None
        and memo.signature == signature
        and (memo.layout_rows is layout_rows or memo.layout_rows == layout_rows)
    ):
        earlier = memo.rows
    built, used = _build(session, signature, earlier, house)
    # bounded: past four versions' worth, keep only the rows of this version
    rows = used if len(earlier) > 4 * max(len(used), 1) else {**earlier, **used}
    _row_memos.put(memo_id, _RowMemo(signature, layout_rows, rows))
    return built


def _build(
    session: Mapping[str, Any], signature: tuple, earlier: dict, house: bool = False
) -> tuple[SeatMapHtml, dict]:
    """The map, and the rows it is made of (``earlier`` rows are reused where their states match)."""
    categories_list, width, off_sale = signature
    categories = {code: (name, price) for code, name, price in categories_list}
    states = session["seats"]
    chunks: list[str] = []
    held: dict[str, tuple[int, str]] = {}
    used = {}
    for r, row in enumerate(session["layout"]["rows"]):
        row_states = tuple(states[r]) if r < len(states) else ()
        memo_key = (r, row_states)
        found = earlier.get(memo_key)
        if found is None:
            found = _build_row(r, row, row_states, categories, width, off_sale, house)
        used[memo_key] = found
        parts, row_held = found
        base = len(chunks)
        chunks.extend(parts)
        for key, (index, html) in row_held.items():
            held[key] = (base + index, html)
    wheelchair = has_wheelchair_spaces(session["layout"])
    built = SeatMapHtml(version=session["version"], chunks=tuple(chunks), held=held, width=width, wheelchair=wheelchair)
    return built, used


def _build_row(
    r: int, row: dict, row_states: tuple, categories: dict, width: int, off_sale: bool = False, house: bool = False
) -> tuple:
    """One row's HTML as parts: every seat held by someone is a part of its own (the viewer's
    overlay swaps it), with its "held by you" variant in ``held``."""
    stats["rows_built"] += 1
    parts: list[str] = []
    held: dict[str, tuple[int, str]] = {}
    out: list[str] = []  # the part being built
    row_label = escape(row["label"])
    out.append(f'<div class="r"><span class="rl" aria-hidden="true">{row_label}</span>')
    cells = row["cells"]
    for c, cell in enumerate(cells):
        state = row_states[c] if c < len(row_states) else GAP
        if cell is None or state == GAP:
            out.append('<i class="g"></i>')
            continue
        if state == HELD:
            key = f"{r}:{c}"
            parts.append("".join(out))
            out.clear()
            held[key] = (len(parts), _seat(r, c, cell, row_label, categories, HELD, mine=True))
            parts.append(_seat(r, c, cell, row_label, categories, HELD))
        else:
            out.append(_seat(r, c, cell, row_label, categories, state, off_sale=off_sale, house=house))
    out.append('<i class="g"></i>' * (width - len(cells)))
    out.append(f'<span class="rl" aria-hidden="true">{row_label}</span></div>')
    parts.append("".join(out))
    return tuple(parts), held


def _seat(
    r: int,
    c: int,
    cell: dict,
    row_label: str,
    categories: dict,
    state: int,
    mine=False,
    picked=False,
    oob=False,
    off_sale=False,
    house=False,
) -> str:
    """One seat's button. ``row_label`` is escaped; ``categories``: code -> (escaped name, price)."""
    cat = cell["cat"]
    cat_name, price = categories[cat]
    said = _words(get_language())
    label = escape(cell["label"])
    extra = flag_words = data = ""
    mark = label
    if cell.get("wheelchair"):
        # the mark is a symbol: the seat's own label rides along for the seat's info sheet (site.js)
        extra, flag_words, mark, data = " wc", said["wheelchair"], "♿", f' data-l="{label}"'
    elif cell.get("companion"):
        extra, flag_words = " cp", said["companion"]
    name = f"{seat_label(row_label, label)}, {cat_name}, {price}{flag_words}"
    if mine:
        classes, words, taken = f"me{' pk' if picked else ''} c-{cat}{extra}", said["mine"], False
    elif state == HELD:
        classes, words, taken = f"h c-{cat}{extra}", said[HELD], True
    elif house and state == BLOCKED:
        classes, words, taken = f"hs c-{cat}{extra}", said["house"], False
    elif off_sale and state == FREE:
        classes, words, taken = f"c-{cat}{extra} x", said["off_sale"], True
    else:
        classes = f"c-{cat}{extra}{STATE_CLASSES.get(state, ' x')}"
        words, taken = said.get(state, said[BLOCKED]), state != FREE
    # aria-disabled (not disabled): taken seats stay focusable and say why they cannot be chosen.
    disabled = ' aria-disabled="true"' if taken else ""
    swap = ' hx-swap-oob="true"' if oob else ""
    return (
        f'<button class="s {classes}" name="seat" value="{r}:{c}" id="s{r}-{c}" '
        f'aria-label="{name}, {words}"{disabled}{swap}{data}>{mark}</button>'
    )


def seat_updates(session: Mapping[str, Any], layout: Layout, seats, state: int, mine: bool, picked=frozenset()) -> str:
    """Out-of-band buttons for the seats one action changed (htmx swaps each by its id), so the
    action's answer is a few hundred bytes, not the map; the live refresh brings other changes."""
    categories = {
        code: (name, price) for code, name, price in _categories(layout, session["prices"], session.get("currency"))
    }
    out = []
    for r, c in seats:
        row = layout["rows"][r]
        out.append(
            _seat(r, c, row["cells"][c], escape(row["label"]), categories, state, mine, f"{r}:{c}" in picked, oob=True)
        )
    return "".join(out)


def legend(session: Mapping[str, Any]) -> list[dict]:
    """Categories used in this hall with colour and price, and the price of each other kind of
    ticket sold there (``kinds``: reduced, ...), for the legend."""
    prices = session["prices"]
    currency = session.get("currency")
    names = category_names(session["layout"]["categories"])
    return [
        {
            "code": c["code"],
            "name": names[c["code"]],
            "color": c["color"],
            "price": format_money(prices[c["code"]], currency),
            "kinds": [
                {"name": ticket_type_name(o), "price": format_money(o["price"], currency)}
                for o in offers.offers_for(session, c["code"])
                if o["code"] != offers.FULL and not o.get("companion")
            ],
        }
        for c in session["layout"]["categories"]
        if c["code"] in prices
    ]


def ticket_kinds(session: Mapping[str, Any]) -> list[dict]:
    """The kinds of ticket a buyer may choose besides full price before picking seats: [{code,
    name}] (companion tickets go with a wheelchair space and are chosen in the cart)."""
    return [
        {"code": t["code"], "name": ticket_type_name(t)}
        for t in offers.ticket_types(session)
        if t["code"] != offers.FULL and not t.get("companion")
    ]


def category_css(session: Mapping[str, Any]) -> str:
    """One CSS rule per category colour (codes are single letters, colours validated hex), with the
    seat numbers' colour that reads on it (AA contrast, ``contrast.ink_on``)."""
    used = session["prices"]
    rules = [
        f".c-{c['code']}{{--cat:{c['color']};--on-cat:{ink_on(c['color'])}}}"
        for c in session["layout"]["categories"]
        if c["code"] in used
    ]
    return "".join(rule for rule in rules if _SAFE_CSS.match(rule))


# Whole rendered pages that are the same for every viewer without a cart (most viewers), per key.
# The viewer's CSRF token is the one per-viewer part: pages are stored with this marker instead.
CSRF_MARKER = "csrf-" + secrets.token_hex(12)
_pages: LRUCache[tuple, str] = LRUCache(CACHE_SIZE)


def shared_page(key: tuple, build) -> str:
    """The HTML ``build()`` returns for this key, built once per process (``key`` must name every
    input of the page: session id and version, template, anything time-dependent)."""
    return _pages.get_or_build(key, build)
