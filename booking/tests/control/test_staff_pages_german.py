"""Every staff page in German: the walk (booking/tests/staff_pages.py) opens each one as a German
superuser and looks for English the catalog translates (a msgid whose German differs) in what
staff read: the text, titles, placeholders, labels and buttons. A raw identifier such as
``pending_payment`` shown as text is English too."""

import re
from functools import cache
from html.parser import HTMLParser
from pathlib import Path

import pytest
from babel.messages.pofile import read_po
from django.conf import settings

from booking.tests.staff_pages import StaffWalk, make_documents, staff_routes, superuser_client

pytestmark = pytest.mark.django_db

CATALOG = Path(settings.BASE_DIR) / "locale" / "de" / "LC_MESSAGES" / "django.po"
# code, data and scripts: what a machine reads (an event payload, an event name), not prose
MACHINE_TEXT = ("script", "style", "template", "textarea", "pre", "code")
READ_ATTRIBUTES = ("title", "placeholder", "aria-label", "alt")
PLACEHOLDER = re.compile(r"%\(\w+\)[sdif]|%[sdif]|\{\w*\}")
# English msgids that are German words as well, so a German page may show them as its own
ALSO_GERMAN = {"Start", "Block", "Theater", "Theaters", "theater", "theaters"}
RAW_IDENTIFIER = re.compile(r"^[a-z]+(?:_[a-z]+)+$")


@cache
def english_phrases() -> list[tuple[str, re.Pattern]]:
    """(msgid, its pattern) of every catalog entry whose German differs from the English: a
    placeholder matches one token; a phrase is found whole (word boundaries at both ends)."""
    phrases = []
    for message in read_po(CATALOG.open("rb")):
        english = message.id if isinstance(message.id, str) else message.id[0]
        german = message.string if isinstance(message.string, str) else message.string[0]
        if not english or not german or german == english or not re.search(r"[A-Za-z]{2}", english):
            continue
        if english in ALSO_GERMAN:
            continue
        # a placeholder stands for one token (a number, an amount, a reference)
        pieces = [re.sub(r"(?:\\\s)+", r"\\s+", re.escape(piece)) for piece in PLACEHOLDER.split(english)]
        body = r"\S+".join(pieces).strip()
        if body[:1].isalpha():  # "Sections" finds "3 sections" too
            body = f"[{body[0].upper()}{body[0].lower()}]{body[1:]}"
        phrases.append((english, re.compile(rf"(?<![\w.-]){body}(?![\w-]|\.\w)")))  # not in order.paid
    return phrases


class ReadText(HTMLParser):
    """The pieces of a page a person reads, each on its own: text between tags, the titles,
    placeholders and labels of elements, the words on buttons; not MACHINE_TEXT."""

    def __init__(self):
        super().__init__()
        self.pieces: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag, attrs):
        found = dict(attrs)
        if tag in MACHINE_TEXT:
            self._hidden += 1
        for name in READ_ATTRIBUTES:
            if found.get(name):
                self.pieces.append(found[name])
        if tag == "input" and found.get("type") in ("submit", "button") and found.get("value"):
            self.pieces.append(found["value"])

    def handle_endtag(self, tag):
        if tag in MACHINE_TEXT and self._hidden:
            self._hidden -= 1

    def handle_data(self, data):
        text = " ".join(data.split())
        if text and not self._hidden:
            self.pieces.append(text)


def english_on(html: str, names: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """The English phrases and raw identifiers a German reader finds on the page; ``names``:
    what the test's documents are called (a show's own title is no English to translate)."""
    reader = ReadText()
    reader.feed(html)
    found = []
    for piece in reader.pieces:
        if piece in names:
            continue
        if RAW_IDENTIFIER.match(piece):
            found.append(piece)
            continue
        found += [english for english, pattern in english_phrases() if pattern.search(piece)]
    return sorted(set(found))


@pytest.fixture
def walk(settings):
    settings.BOOKING_PREVENT_ORPHAN_SEATS = False  # the documents' single seats fall anywhere
    documents = make_documents()
    client, _boss = superuser_client("de")
    walk = StaffWalk(client, documents)
    walk.walk()
    return walk


def test_the_check_finds_english_a_page_would_show():
    assert "Sold" in english_on("<p>Sold</p><p>Verkauft</p>") and english_on("<p>Verkauft</p>") == []
    assert "Sections" in english_on("<span>(3 sections)</span>")  # whatever its first letter
    assert english_on('<input type="submit" value="Sell">') == ["Sell"]
    assert "Seat map" in english_on('<a title="Seat map">Saalplan</a>')
    assert "%(seats)s seats" in english_on("<td>4 seats</td>")
    assert english_on("<td>pending_payment</td>") == ["pending_payment"]
    assert english_on("<p>Alles verkauft</p><script>var a = 'Sold';</script><pre>order.paid</pre>") == []
    assert len(english_phrases()) > 500


def test_the_walk_reaches_every_staff_page(walk):
    """Every staff URL either rendered as a page or answered a GET as no page does (a POST-only
    action, a file, a redirect); only files and the door's endpoints of a document it did not make
    (a credit note, a scan conflict) may be left."""
    assert len(walk.pages) >= 80, [page.path for page in walk.pages]
    reached = {page.route for page in walk.pages}
    for needed in ("admin:booking_order_change", "admin:booking_session_change", "admin:booking_session_sell",
                   "admin:booking_session_sold", "admin:booking_theater_change", "admin:booking_tillclosing_closing",
                   "admin:booking_webhookendpoint_delivery", "checkin:door", "checkin:login"):  # fmt: skip
        assert needed in reached, (needed, walk.unreached())
    files = {name for route, name in staff_routes() if re.search(r"\.\w+$", route)}  # a PDF, a chart, a CSV
    assert [name for name in walk.unreached() if name not in files and not name.startswith("checkin:")] == []


def test_every_staff_page_is_german(walk):
    names = {"Globe", "Hamlet", "Faust", "Test Stadium", "Season A", "Studio"}
    english = {page.path: words for page in walk.pages if (words := english_on(page.html, names))}
    assert not english, "\n".join(f"{path}: {words}" for path, words in english.items())


@pytest.mark.parametrize(
    "grid, categories, german",
    [
        ("A: ssS.Sss\nB: sss.sss\n", [("s", "Parkett")], "davon Rollstuhlplätze"),
        ("A: sss\nB: s?s\n", [("s", "Parkett")], "Reihe"),
        ("A: sss\n", [], "Platzkategorie"),
    ],
    ids=["wheelchair-spaces", "a-mistake", "no-category"],
)
def test_the_layout_preview_is_german(grid, categories, german):
    """The preview beside the layout editor, which htmx posts for and no link opens."""
    client, _boss = superuser_client("de")
    form = {"name": "Saal", "grid": grid, "cat-TOTAL_FORMS": "6", "cat-INITIAL_FORMS": "0"}
    form.update({"cat-MIN_NUM_FORMS": "6", "cat-MAX_NUM_FORMS": "6"})
    for i in range(6):
        code, name = categories[i] if i < len(categories) else ("", "")
        form.update({f"cat-{i}-code": code, f"cat-{i}-name": name, f"cat-{i}-color": "#3b82f6"})
    response = client.post("/admin/booking/theater/preview/", form, headers={"HX-Request": "true"})
    assert response.status_code == 200
    page = response.content.decode()
    assert german in page, page
    assert english_on(page, {"Parkett", "Saal"}) == []
