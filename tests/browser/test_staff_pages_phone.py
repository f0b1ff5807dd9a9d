"""Every staff page on a German phone (390x844): none scrolls sideways, a wide table scrolls in its
own box instead; on the phone sell page the row labels that stay in view leave every seat
uncovered. The pages are the walk's (booking/tests/staff_pages.py), so a page added later is
covered as soon as a list links to it. One browser page opens them all; a screenshot of each goes
to test-artifacts/browser/."""

import pytest
from django.conf import settings

from booking.tests.factories import make_session, make_theater
from booking.tests.staff_pages import StaffWalk, make_documents, superuser_client

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.slow]

PHONE = {"width": 390, "height": 844}


@pytest.fixture(autouse=True)
def _no_orphan_rule(settings):
    settings.BOOKING_PREVENT_ORPHAN_SEATS = False  # the documents' single seats fall anywhere


@pytest.fixture
def staff_phone(chromium, live_server):
    """A German phone signed in as the walk's superuser, and the walk's pages."""
    documents = make_documents()
    client, _boss = superuser_client("de")
    walk = StaffWalk(client, documents)
    walk.walk()
    context = chromium.new_context(
        base_url=live_server.url, viewport=PHONE, locale="de-DE", timezone_id="Europe/Berlin"
    )
    context.set_default_timeout(8000)
    session = client.cookies[settings.SESSION_COOKIE_NAME].value
    context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": session, "url": live_server.url}])
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(f"{page.url}: {exc}"))
    yield page, walk, errors
    context.close()


# The outermost elements that reach past the screen's right edge: what to fix on a page too wide.
OVERFLOWING = """() => {
  const name = (e) =>
    e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + [...e.classList].map((c) => '.' + c).join('');
  const clipped = (e) => {  // inside a scroll box (an absolute element may escape one: count it)
    if (['absolute', 'fixed'].includes(getComputedStyle(e).position)) return false;
    for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== 'visible') return true;
    }
    return false;
  };
  const out = [];
  for (const e of document.body.querySelectorAll('*')) {
    const right = e.getBoundingClientRect().right;
    if (right > innerWidth + 1 && e.parentElement.getBoundingClientRect().right <= innerWidth + 1 && !clipped(e)) {
      out.push(name(e.parentElement) + ' > ' + name(e) + ' ' + Math.round(right) + 'px');
    }
  }
  return out.slice(0, 4);
}"""


def wider_than_the_phone(page) -> int:
    return page.evaluate("document.scrollingElement.scrollWidth")


def test_no_staff_page_scrolls_sideways_on_a_phone(staff_phone, shot):
    page, walk, errors = staff_phone
    assert len(walk.pages) >= 80
    too_wide = {}
    for number, staff_page in enumerate(walk.pages):
        page.goto(staff_page.path, wait_until="load", timeout=30_000)  # a report under CI load takes its time
        if page.url.endswith("/admin/login/") or "/login/" in page.url and "login" not in staff_page.path:
            pytest.fail(f"signed out at {staff_page.path}")
        width = wider_than_the_phone(page)
        if width > PHONE["width"]:
            too_wide[staff_page.path] = f"{width}px: {page.evaluate(OVERFLOWING)}"
        shot(page, f"{number:03d}-{staff_page.route.split(':')[1]}", full_page=False)
    assert not errors, errors
    assert not too_wide, "\n".join(f"{path}: {what}" for path, what in too_wide.items())


def test_the_catch_sees_a_page_wider_than_the_phone(staff_phone):
    page, _walk, _errors = staff_phone
    page.goto("/admin/booking/order/")
    assert wider_than_the_phone(page) <= PHONE["width"]
    page.evaluate("document.body.insertAdjacentHTML('beforeend', '<div style=\"width: 600px\">x</div>')")
    assert wider_than_the_phone(page) > PHONE["width"]


# A hall wider than a phone: 32 seats a row, so the sell page's map scrolls sideways in its box.
WIDE_GRID = "\n".join(f"{row}: {'s' * 16}.{'s' * 16}" for row in "ABCD") + "\n"

# For each seat of the first row whose middle is inside the map's box: what a tap there reaches.
TAPPED = """() => {
  const box = document.querySelector('.map-scroll').getBoundingClientRect();
  return [...document.querySelectorAll('.map .r')[0].querySelectorAll('.s')].map((seat) => {
    const r = seat.getBoundingClientRect(), x = r.left + r.width / 2, y = r.top + r.height / 2;
    if (x < box.left || x > box.right) return null;
    const hit = document.elementFromPoint(x, y);
    return {seat: seat.getAttribute('aria-label'), reached: hit === seat || seat.contains(hit)};
  }).filter(Boolean);
}"""


def test_the_row_letters_on_the_phone_sell_page_leave_every_seat_free(staff_phone, shot):
    page, _walk, _errors = staff_phone
    session = make_session(make_theater(WIDE_GRID, name="Wide Hall"), name="Wide")
    page.goto(f"/admin/booking/session/{session['_id']}/sell/")
    scroll_box = page.locator(".map-scroll")
    assert scroll_box.evaluate("box => box.scrollWidth > box.clientWidth")  # the map is wider than the phone
    letter = page.locator(".map .r").first.locator(".rl").first.bounding_box()
    first_seats = page.locator(".map .r").first.locator(".s")
    scroll_box.evaluate("box => box.scrollLeft = 0")  # (a wide hall opens at its middle)
    for n in range(3):  # at the start, seats 1-3 lie beside the row letter, not under it
        assert first_seats.nth(n).bounding_box()["x"] >= letter["x"] + letter["width"] - 1
    shot(page, "sell-map-start", full_page=False)
    for scrolled in (0, 200, 10_000):  # the start, the middle, the end: every seat in sight takes its tap
        scroll_box.evaluate(f"box => box.scrollLeft = {scrolled}")
        tapped = page.evaluate(TAPPED)
        assert tapped and all(seat["reached"] for seat in tapped), (scrolled, tapped)
    shot(page, "sell-map-end", full_page=False)


# Each column header's box and its left border; where its text starts and ends.
HEADERS = """() => [...document.querySelectorAll('#result_list thead th')].map((th) => {
  const range = document.createRange(); range.selectNodeContents(th);
  const text = range.getBoundingClientRect();
  const border = parseFloat(getComputedStyle(th).borderLeftWidth);
  return {border: border, left: text.left, right: text.right, empty: !th.innerText.trim()};
})"""


def test_the_order_lists_column_headers_are_set_apart(staff_phone, shot):
    page, _walk, _errors = staff_phone
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto("/admin/booking/order/")
    headers = [h for h in page.evaluate(HEADERS) if not h["empty"]]
    assert len(headers) >= 5
    for before, after in zip(headers, headers[1:], strict=False):
        assert after["border"] >= 1 or before["border"] >= 1  # a line between them
        assert after["left"] - before["right"] >= 12  # and room: the words never run together
    shot(page, "order-list-desktop", full_page=False)
