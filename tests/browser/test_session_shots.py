"""Screenshots of the session page (Grand Hall, Studio Stage, a stadium section) at a phone's
390x844 and a laptop's 1366x768, for a person to look at: /tmp/shots/map/<SHOTS_TAG>/."""

import os
from pathlib import Path

import pytest

from booking.sales import demo
from booking.sales.demo_stadium import create_match, create_stadium
from tests.browser.scrolling import scroll_into_view

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1366, "height": 768}


@pytest.fixture
def halls():
    grand = demo.create_theater("Grand Hall", demo.parse_grid(demo.grand_hall_grid(), demo.GRAND_CATEGORIES))
    studio = demo.create_theater("Studio Stage", demo.parse_grid(demo.STUDIO_GRID, demo.STUDIO_CATEGORIES))
    from booking.tests.factories import make_session

    return {
        "grand": make_session(grand, name="Hamlet", prices={"p": 5500, "s": 3900, "b": 2500}),
        "studio": make_session(studio, name="Waiting for Godot", prices={"s": 2200, "r": 1500}),
        "stadium": create_match(create_stadium("Riverside Stadium", seats=4 * 1000)),
    }


def test_session_page_screenshots(new_page, halls):
    folder = Path("/tmp/shots/map") / os.environ.get("SHOTS_TAG", "after")
    folder.mkdir(parents=True, exist_ok=True)
    for name, session in halls.items():
        for label, viewport in (("390x844", PHONE), ("1366x768", LAPTOP)):
            page = new_page(viewport)
            page.goto(f"/sessions/{session['_id']}/")
            page.wait_for_timeout(300)
            page.screenshot(path=str(folder / f"{name}-{label}.png"))
            page.screenshot(path=str(folder / f"{name}-{label}-full.png"), full_page=True)
            free = page.locator("#seatmap button.s:not([aria-disabled])").first
            scroll_into_view(free)
            free.hover()
            free.click()  # a seat held: the cart bar on a phone, the tooltip on a laptop
            page.locator("#cart-summary .countdown").wait_for()
            page.wait_for_timeout(300)
            page.screenshot(path=str(folder / f"{name}-{label}-held.png"))
