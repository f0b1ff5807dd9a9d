"""axe-core (vendored from npm, static/vendor/axe-core-*) on every buyer page and every staff page
we added, at a phone's 390x844 and a laptop's 1366x768: any serious or critical violation fails,
listed page by page (rule, impact, the element, what axe says to fix).

Nothing is excluded silently: ``ALLOWED`` names each rule we cannot fix for one selector only
(markup that is not ours), with the reason.
"""

import re
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect

from booking.core import clock, mongo
from booking.sales import promos, waiting_room
from booking.sales.demo import GRAND_CATEGORIES, STUDIO_CATEGORIES, STUDIO_GRID, grand_hall_grid
from booking.sales.demo_stadium import create_match, create_stadium
from booking.tests.factories import make_session, make_theater
from booking.tests.paying import checkout_paid

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1366, "height": 768}
AXE = next((Path(settings.BASE_DIR) / "static" / "vendor").glob("axe-core-*/axe.min.js"))
# Injected from our own static files (the vendored copy): the pages' CSP allows scripts from
# 'self' only, and the pages are checked under their real CSP (an inline copy would be refused).
AXE_URL = "/static/" + AXE.relative_to(Path(settings.BASE_DIR) / "static").as_posix()
SHOTS = Path("/tmp/shots/a11y")

# (rule, selector): violations of this rule on elements inside this selector are not counted.
ALLOWED: list[tuple[str, str, str]] = [
    # localstripe's stand-in for Stripe's card element: five bare inputs it writes into our page
    # (real Stripe.js renders its own labelled iframe there). Not our markup.
    ("label", "[data-card-element]", "localstripe's fake card form"),
    ("color-contrast", "[data-card-element]", "localstripe's fake card form"),
]

RUN_AXE = """async (allowed) => {
  const result = await axe.run(document, {resultTypes: ['violations']});
  const out = [];
  for (const v of result.violations) {
    const nodes = v.nodes.filter((node) => {
      const el = typeof node.target[0] === 'string' ? document.querySelector(node.target[0]) : null;
      return !(el && allowed.some(([rule, sel]) => rule === v.id && el.closest(sel)));
    });
    if (!nodes.length) continue;
    out.push({rule: v.id, impact: v.impact, count: nodes.length, nodes: nodes.slice(0, 3).map((node) => ({
      target: node.target.map(String).join(' >>> '), html: node.html.slice(0, 160),
      why: node.failureSummary.replace(/\\s+/g, ' ').slice(0, 260)}))});
  }
  return out;
}"""


@dataclass
class Audit:
    viewport: dict
    found: list[str]  # serious and critical: the test fails on them
    notes: list[str] = field(default_factory=list)  # moderate and minor: written to the artifacts to read

    def check(self, page: Page, name: str) -> None:
        """Run axe on the page as it is now; record its serious and critical violations (per rule:
        how many elements, the first three with what axe says to fix) and save a screenshot."""
        page.add_script_tag(url=AXE_URL)
        for v in page.evaluate(RUN_AXE, [[rule, sel] for rule, sel, _why in ALLOWED]):
            lines = [f"{name} ({page.url}): [{v['impact']}] {v['rule']} on {v['count']} element(s)"]
            lines += [f"    {n['target']}: {n['html']}\n      {n['why']}" for n in v["nodes"]]
            (self.found if v["impact"] in ("serious", "critical") else self.notes).append("\n".join(lines))
        SHOTS.mkdir(parents=True, exist_ok=True)
        shot = SHOTS / f"{self.viewport['width']}-{re.sub(r'[^\w-]+', '_', name)}.png"
        page.screenshot(path=str(shot), full_page=True)

    def visit(self, page: Page, url: str, name: str) -> None:
        response = page.goto(url)
        assert response is not None and response.status < 400, f"{name}: {url} answered {response and response.status}"
        self.check(page, name)

    def assert_clean(self) -> None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        (SHOTS / f"axe-moderate-{self.viewport['width']}.txt").open("a").write("\n".join(self.notes) + "\n")
        assert not self.found, "axe-core found serious or critical violations:\n" + "\n".join(self.found)


def seat(page, row: str, number: int):
    return page.get_by_role("button", name=re.compile(rf"^Row {row}, seat {number},"))


@pytest.fixture
def venues():
    grand = make_theater(grand_hall_grid(), GRAND_CATEGORIES, name="Grand Hall")
    studio = make_theater(STUDIO_GRID, STUDIO_CATEGORIES, name="Studio Stage")
    stadium = create_stadium("Riverside Stadium", seats=8 * 40, rows=4, half=5)
    return {
        "grand": make_session(grand, name="Hamlet", prices={"p": 5500, "s": 3900, "b": 2500}),
        "studio": make_session(studio, name="Waiting for Godot", prices={"s": 2200, "r": 1500}, days=2),
        "queued": make_session(studio, name="The Big Premiere", prices={"s": 2200, "r": 1500}, days=3),
        "match": create_match(stadium, days=4),
        "stadium": stadium,
        "grand_theater": grand,
    }


@pytest.mark.parametrize("viewport", [PHONE, LAPTOP], ids=["phone", "laptop"])
def test_no_serious_axe_violations_on_buyer_pages(new_page, venues, viewport):
    audit = Audit(viewport, [])
    page = new_page(viewport)
    studio = venues["studio"]
    audit.visit(page, "/", "what's on")
    audit.visit(page, f"/sessions/{venues['grand']['_id']}/", "session: Grand Hall")
    audit.visit(page, f"/performances/{venues['match']['performanceId']}/", "stadium: section map")
    audit.visit(page, f"/sessions/{venues['match']['_id']}/", "stadium: one section")
    audit.visit(page, f"/sessions/{studio['_id']}/", "session: Studio Stage")
    seat(page, "D", 4).click()
    expect(seat(page, "D", 4)).to_have_attribute("aria-label", re.compile("held by you$"))
    audit.check(page, "session: Studio Stage, a seat held")
    audit.visit(page, "/cart/", "cart")
    audit.visit(page, "/checkout/", "checkout: details")
    page.get_by_label("Name").fill("Ada Lovelace")
    page.get_by_label("E-mail").fill("ada@example.com")
    page.get_by_role("button", name=re.compile("^Continue")).click()
    expect(page.get_by_role("heading", name="Payment")).to_be_visible()
    expect(page.locator("[data-card-element] input")).to_have_count(5)
    audit.check(page, "checkout: payment")
    [order] = mongo.orders().find({}, hint=[("_id", 1)])
    audit.visit(page, f"/orders/{order['ref']}/", "order: awaiting payment")
    audit.visit(page, "/find-booking/", "find booking")
    page.get_by_label(re.compile("reference", re.I)).fill("ZZZZZZZZ")
    page.get_by_label(re.compile("mail", re.I)).fill("nobody@example.com")
    page.get_by_role("button", name="Find booking").click()
    audit.check(page, "find booking: not found")

    paid = checkout_paid_for(studio)
    other = new_page(viewport)
    audit.visit(other, "/find-booking/", "find booking (other buyer)")
    other.get_by_label(re.compile("reference", re.I)).fill(paid["ref"])
    other.get_by_label(re.compile("mail", re.I)).fill(paid["email"])
    other.get_by_role("button", name="Find booking").click()
    expect(other).to_have_url(re.compile(rf"/orders/{paid['ref']}/$"))
    audit.check(other, "order: paid, with tickets")
    audit.visit(other, f"/orders/{paid['ref']}/tickets/", "printable tickets")

    now = clock.now()
    waiting_room.enable(
        venues["queued"]["_id"], opens_at=now - timedelta(minutes=5), on_sale_at=now + timedelta(hours=1), rate=60
    )
    audit.visit(other, f"/queue/{venues['queued']['_id']}/", "waiting room")
    response = other.goto("/no-such-page/")
    assert response is not None and response.status == 404
    audit.check(other, "not found (404)")
    audit.assert_clean()


def checkout_paid_for(session: dict) -> dict:
    from booking.sales import holds

    cart = holds.hold_seats(session["_id"], "s:a11y-paid", None, ["6:0", "6:1"])
    return checkout_paid("s:a11y-paid", cart.cart_id, "Grace Hopper", "grace@example.com")


@pytest.fixture
def staff(new_page, viewport):
    User.objects.create_superuser("boss", "boss@theater.example", "a-long-test-password")
    page = new_page(viewport)
    page.goto("/admin/login/")
    page.get_by_label("Username").fill("boss")
    page.get_by_label("Password").fill("a-long-test-password")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Site administration")).to_be_visible()
    return page


@pytest.mark.parametrize("viewport", [PHONE, LAPTOP], ids=["phone", "laptop"])
def test_no_serious_axe_violations_on_staff_pages(new_page, venues, viewport, staff):
    audit = Audit(viewport, [])
    page = staff
    door = new_page(viewport)
    audit.visit(door, "/checkin/login/", "check-in: login")

    paid = checkout_paid_for(venues["studio"])
    now = clock.now()
    room = waiting_room.enable(
        venues["queued"]["_id"], opens_at=now - timedelta(minutes=5), on_sale_at=now + timedelta(hours=1), rate=60
    )
    [cart] = mongo.carts().find({}, hint=[("_id", 1)])
    code = promos.create_code("SPRING10", "percent", 10, cap=100)
    batch = promos.generate_batch(3, "amount", 500, prefix="GIFT")
    theater_id, studio_id = venues["grand_theater"]["_id"], venues["studio"]["_id"]
    admin = "/admin/booking"
    pages = [
        ("/admin/", "admin index"),
        (f"{admin}/theater/", "theaters"),
        (f"{admin}/theater/add/", "theater: add (layout editor)"),
        (f"{admin}/theater/import/", "theater: import"),
        (f"{admin}/theater/{theater_id}/change/", "theater: change (layout editor)"),
        (f"{admin}/theater/{venues['stadium']['_id']}/change/", "theater: stadium sections"),
        (f"{admin}/theater/{theater_id}/ticket-types/", "theater: ticket types"),
        (f"{admin}/theater/{theater_id}/delete/", "theater: delete"),
        (f"{admin}/session/", "sessions"),
        (f"{admin}/session/add/", "session: add"),
        (f"{admin}/session/add/?theater={theater_id}", "session: add in a theater"),
        (f"{admin}/session/add-series/", "session: add a series"),
        (f"{admin}/session/{studio_id}/change/", "session: change"),
        (f"{admin}/session/{studio_id}/seats/", "session: staff live seat map"),
        (f"{admin}/session/{studio_id}/prices/", "session: price table"),
        (f"{admin}/session/{studio_id}/sale-window/", "session: sale window"),
        (f"{admin}/session/{studio_id}/cancel/", "session: cancel"),
        (f"{admin}/cart/", "carts"),
        (f"{admin}/cart/{cart['_id']}/change/", "cart"),
        (f"{admin}/order/", "orders"),
        (f"{admin}/order/?q=grace", "orders: search"),
        (f"{admin}/order/{paid['_id']}/change/", "order"),
        (f"{admin}/promocode/", "promo codes"),
        (f"{admin}/promocode/add/", "promo code: add"),
        (f"{admin}/promocode/{code['_id']}/change/", "promo code"),
        (f"{admin}/promocode/batch/add/", "voucher batch: add"),
        (f"{admin}/promocode/batch/{batch}/", "voucher batch"),
        (f"{admin}/waitingroom/", "waiting rooms"),
        (f"{admin}/waitingroom/add/", "waiting room: add"),
        (f"{admin}/waitingroom/{room.queue_id}/change/", "waiting room"),
        (f"{admin}/waitingroom/{room.queue_id}/end/", "waiting room: end"),
        ("/checkin/", "check-in: performances"),
        (f"/checkin/{studio_id}/", "check-in: door page"),
        (f"/checkin/{studio_id}/?q=hopper", "check-in: door page, search"),
    ]
    for url, name in pages:
        audit.visit(page, url, name)
    audit.assert_clean()
