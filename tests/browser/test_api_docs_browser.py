"""The REST API's interactive docs in real Chromium, under the site's Content-Security-Policy:
Swagger UI from our own static files lists the operations (a CSP that blocked its script would
leave the page blank)."""

import pytest
from playwright.sync_api import expect

from tests.browser.test_admin_browser import log_in_as_boss

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_staff_see_the_operations_in_swagger_ui(new_page, shot):
    page = log_in_as_boss(new_page, {"width": 1400, "height": 1000}, then="/api/v1/docs/")
    # Swagger UI fetches and renders the whole schema first: seconds on a machine busy with the suite
    expect(page.get_by_text("Theater booking API").first).to_be_visible(timeout=30_000)
    expect(page.get_by_text("/api/v1/orders/", exact=True).first).to_be_visible()
    expect(page.get_by_text("/api/v1/tickets/check-in/", exact=True)).to_be_visible()
    shot(page, "api-docs")
