"""Arrow keys on the seat map in real Chromium: one Tab stop for the whole map, arrows move between
seats (over gaps and aisles), Home/End, Enter holds, and all of it survives the click's answer
and the live refresh that replaces the map.

Studio Stage (columns from 0; "." is a gap, column 7 the aisle)::

    A: ...ssss.ssss...   row 0
    B: ..sssss.sssss..   row 1
    C: .ssssss.ssssss.
    D: sssssss.sssssss
    E: ssrssss.ssssrss   row 4
    F: Srrr.ss.ss.rrrS   row 5: gaps at 4, 7 and 10
    G: rrrrrrr.rrrrrrr   row 6
"""

import re

import pytest
from playwright.sync_api import expect

from booking.sales import selectors
from booking.sales.demo import STUDIO_CATEGORIES, STUDIO_GRID
from booking.tests.factories import make_session, make_theater
from booking.venues.seat_grid import HELD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FOCUSED = "document.activeElement.value || ''"
# How many seats Tab can reach (tabIndex >= 0), and which.
TAB_STOPS = "[...document.querySelectorAll('#seatmap button.s')].filter(b => b.tabIndex >= 0).map(b => b.value)"
# Records, after every handler ran, whether a key press was taken (defaultPrevented).
RECORD_KEYS = """() => {
  window.keysSeen = [];
  window.addEventListener('keydown', e => window.keysSeen.push([e.key, e.defaultPrevented]));
}"""


@pytest.fixture
def show():
    theater = make_theater(STUDIO_GRID, STUDIO_CATEGORIES, name="Studio Stage")
    return make_session(theater, name="Waiting for Godot", prices={"s": 2200, "r": 1500})


def seat(page, row: str, number: int):
    return page.get_by_role("button", name=re.compile(rf"^Row {row}, seat {number},"))


def tab_to_map(page) -> str:
    for _ in range(40):
        page.keyboard.press("Tab")
        value = page.evaluate(FOCUSED)
        if re.fullmatch(r"\d+:\d+", value):
            return value
    pytest.fail("no seat reachable with Tab")


def press(page, key: str) -> str:
    page.keyboard.press(key)
    return page.evaluate(FOCUSED)


def test_arrow_keys_move_between_seats(new_page, shot, show):
    page = new_page()
    page.goto(f"/sessions/{show['_id']}/")
    expect(page.get_by_text("arrow keys move between seats")).to_be_visible()  # the hint, shown with JS
    # The whole map is one Tab stop: the first free seat (A1).
    assert page.evaluate(TAB_STOPS) == ["0:3"]
    assert tab_to_map(page) == "0:3"
    expect(seat(page, "A", 1)).to_be_focused()
    shot(page, "tabbed-to-the-map", full_page=False)

    assert press(page, "ArrowRight") == "0:4"
    assert press(page, "ArrowRight") == "0:5"
    assert press(page, "ArrowRight") == "0:6"
    assert press(page, "ArrowRight") == "0:8"  # over the aisle
    assert press(page, "ArrowLeft") == "0:6"
    assert press(page, "End") == "0:11"
    assert press(page, "ArrowRight") == "0:11"  # the row's end: stays
    assert press(page, "Home") == "0:3"
    assert press(page, "ArrowLeft") == "0:3"
    assert press(page, "ArrowUp") == "0:3"  # the first row: stays

    assert press(page, "ArrowDown") == "1:3"  # straight down while the columns line up
    assert press(page, "ArrowDown") == "2:3"
    assert press(page, "ArrowLeft") == "2:2"
    assert press(page, "ArrowLeft") == "2:1"
    assert press(page, "ArrowUp") == "1:2"  # nothing straight above (a gap): the nearest seat
    assert press(page, "ArrowUp") == "0:3"
    assert press(page, "ArrowDown") == "1:2"  # back down to where the Up moves started, as an editor does
    assert press(page, "ArrowDown") == "2:1"
    # Down through F's gap at column 4 and back up: the column is kept, no drift to the side.
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    assert page.evaluate(FOCUSED) == "2:4"
    assert press(page, "ArrowDown") == "3:4"
    assert press(page, "ArrowDown") == "4:4"
    assert press(page, "ArrowDown") == "5:3"  # gap below: of the two equally near seats, the left
    assert press(page, "ArrowDown") == "6:4"  # back in column 4
    assert press(page, "ArrowDown") == "6:4"  # the last row: stays
    assert press(page, "ArrowUp") == "5:3"
    assert press(page, "ArrowUp") == "4:4"
    shot(page, "moved-by-arrow-keys", full_page=False)

    # Still one Tab stop, now the seat last focused: Tab leaves the map, Shift+Tab comes back to it.
    assert page.evaluate(TAB_STOPS) == ["4:4"]
    page.keyboard.press("Tab")
    assert not page.evaluate("document.activeElement.closest('#seatmap')")
    assert press(page, "Shift+Tab") == "4:4"

    # Focus that comes another way (a click, a screen reader) moves the Tab stop too.
    seat(page, "G", 2).focus()
    assert page.evaluate(TAB_STOPS) == ["6:1"]
    seat(page, "E", 5).focus()
    assert page.evaluate(TAB_STOPS) == ["4:4"]


def test_other_keys_and_modifiers_are_left_alone(new_page, show):
    page = new_page()
    page.goto(f"/sessions/{show['_id']}/")
    assert tab_to_map(page) == "0:3"
    assert press(page, "ArrowRight") == "0:4"
    page.evaluate(RECORD_KEYS)
    for key in ["Shift+ArrowRight", "Alt+ArrowRight", "Control+ArrowRight", "Control+End", "a", "PageDown"]:
        assert press(page, key) == "0:4", key
    assert press(page, "ArrowRight") == "0:5"  # the plain key still works
    seen = page.evaluate("window.keysSeen.filter(k => !['Shift', 'Alt', 'Control'].includes(k[0]))")
    assert seen == [
        ["ArrowRight", False],
        ["ArrowRight", False],
        ["ArrowRight", False],
        ["End", False],
        ["a", False],
        ["PageDown", False],
        ["ArrowRight", True],
    ]
    # Off the seats arrow keys are not taken either (here: the zoom button above the map).
    page.get_by_role("button", name="Zoom in").focus()
    page.evaluate("window.keysSeen = []")
    page.keyboard.press("ArrowDown")
    assert page.evaluate("window.keysSeen") == [["ArrowDown", False]]
    expect(page.get_by_role("button", name="Zoom in")).to_be_focused()


def test_enter_holds_and_keys_survive_the_answer_and_the_live_refresh(new_page, shot, show):
    page, other = new_page(), new_page()
    url = f"/sessions/{show['_id']}/"
    page.goto(url)
    other.goto(url)
    assert tab_to_map(page) == "0:3"
    assert press(page, "ArrowDown") == "1:3"
    assert press(page, "ArrowRight") == "1:4"

    # Enter holds the focused seat; the answer swaps that button, focus and the Tab stop stay on it.
    page.keyboard.press("Enter")
    expect(seat(page, "B", 3)).to_have_attribute("aria-label", re.compile("held by you$"))
    expect(seat(page, "B", 3)).to_be_focused()
    assert page.evaluate(FOCUSED) == "1:4"
    assert selectors.get_session(show["_id"])["seats"][1][4] == HELD
    assert page.evaluate(TAB_STOPS) == ["1:4"]  # the new button is no extra Tab stop
    shot(page, "held-by-keyboard", full_page=False)
    assert press(page, "ArrowDown") == "2:4"
    assert press(page, "ArrowUp") == "1:4"

    # Another buyer's hold: this page's next live refresh replaces the whole map (not a 304).
    page.evaluate("window.mapBefore = document.getElementById('seatmap')")
    seat(other, "D", 1).click()
    expect(seat(other, "D", 1)).to_have_attribute("aria-label", re.compile("held by you$"))
    expect(seat(page, "D", 1)).to_have_attribute("aria-label", re.compile("held by someone else$"), timeout=4500)
    assert page.evaluate("document.getElementById('seatmap') !== window.mapBefore && !window.mapBefore.isConnected")
    expect(seat(page, "B", 3)).to_be_focused()  # htmx put focus back on the seat of the same id
    assert page.evaluate(TAB_STOPS) == ["1:4"]
    shot(page, "after-live-refresh", full_page=False)

    assert press(page, "ArrowLeft") == "1:3"
    assert press(page, "ArrowDown") == "2:3"
    assert press(page, "ArrowDown") == "3:3"
    assert press(page, "Home") == "3:0"  # D1, held by the other buyer: focusable, says so
    expect(seat(page, "D", 1)).to_be_focused()
    assert page.evaluate(TAB_STOPS) == ["3:0"]
    page.keyboard.press("Enter")  # a taken seat explains itself, focus stays
    expect(page.locator("#notice")).to_contain_text("just taken by someone else")
    expect(seat(page, "D", 1)).to_be_focused()
    assert press(page, "ArrowRight") == "3:1"
    assert page.evaluate(TAB_STOPS) == ["3:1"]


def test_big_hall_scrolls_to_the_focused_seat(new_page, shot):
    from booking.sales.demo import GRAND_CATEGORIES, grand_hall_grid

    grand = make_session(
        make_theater(grand_hall_grid(), GRAND_CATEGORIES, name="Grand Hall"),
        name="Hamlet",
        prices={"p": 5500, "s": 3900, "b": 2500},
    )
    phone = new_page(viewport={"width": 390, "height": 844})
    phone.goto(f"/sessions/{grand['_id']}/")
    box = phone.locator("#seatmap .map-scroll")
    assert box.evaluate("b => b.scrollWidth > b.clientWidth + 300")  # much wider than the phone

    def clear_of_the_row_labels() -> bool:
        # the focused seat lies inside the box and outside the sticky row labels at both ends
        return phone.evaluate("""() => {
          const s = document.activeElement.getBoundingClientRect();
          const b = document.querySelector('#seatmap .map-scroll').getBoundingClientRect();
          const r = document.activeElement.closest('.r');
          const left = r.firstElementChild.getBoundingClientRect().right;
          const right = r.lastElementChild.getBoundingClientRect().left;
          return s.left >= Math.max(b.left, left) && s.right <= Math.min(b.right, right);
        }""")

    assert tab_to_map(phone) == "0:4"  # A1
    start = box.evaluate("b => b.scrollLeft")
    assert clear_of_the_row_labels()
    assert press(phone, "End") == "0:44"
    assert clear_of_the_row_labels()
    right = box.evaluate("b => b.scrollLeft")
    assert right > start
    assert press(phone, "ArrowDown") == "1:44"
    for _ in range(3):
        phone.keyboard.press("ArrowDown")
    assert phone.evaluate(FOCUSED) == "4:44"  # the column is kept though the rows widen outwards
    shot(phone, "end-of-row-on-a-phone", full_page=False)
    assert press(phone, "Home") == "4:2"
    assert clear_of_the_row_labels()
    assert box.evaluate("b => b.scrollLeft") < right
    for _ in range(10):
        phone.keyboard.press("ArrowRight")
    assert phone.evaluate(FOCUSED) == "4:12"
    assert clear_of_the_row_labels()
    shot(phone, "moved-along-the-row-on-a-phone", full_page=False)
