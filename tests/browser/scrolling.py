"""Scrolling a seat into view while the seat map may redraw it."""

from playwright.sync_api import Error, Locator


def scroll_into_view(locator: Locator, tries: int = 5) -> None:
    """``locator.scroll_into_view_if_needed()``, tried again when the element it found was replaced
    before it settled: a poll or a pushed change redraws the map at any moment, and Playwright's
    clicks and taps wait such a redraw out while its scroll fails with "not attached"."""
    for attempt in range(1, tries + 1):
        try:
            locator.scroll_into_view_if_needed()
            return
        except Error as exc:
            if "not attached" not in str(exc) or attempt == tries:
                raise
