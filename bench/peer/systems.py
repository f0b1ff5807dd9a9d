"""What a browser sends to each system for the same buyer's steps (bench/peer/flows.py times them).

Ours: the pages and htmx posts of booking/ (as bench/flows.py sends them). pretix: its shop's
pages and forms, with ``?ajax=1`` on the forms its own JavaScript sends that way (cart add, cart
clear, the confirm step): with tasks run eagerly the answer is the task's outcome as JSON.
"""

import json
import re
import urllib.parse

from ..flows import HTMX, MINE
from ..load import Client, Response

ORDER_PATH = re.compile(r"/order/([A-Z0-9]+)/([A-Za-z0-9]+)/")


class Ours:
    name = "ours"

    def __init__(self, params: dict):
        self.p = params

    def whats_on(self, c: Client) -> Response:
        return c.get("/")

    def seat_map(self, c: Client, event: str) -> Response:
        return c.get(f"/sessions/{self.p['sessions'][event]}/")

    def hold(self, c: Client, event: str, seats: list[str]) -> tuple[Response, bool]:
        r = c.post(f"/sessions/{self.p['sessions'][event]}/hold", {"seats": seats, "wheelchair": "1"}, HTMX)
        return r, r.status == 200 and MINE in r.body

    def release(self, c: Client, event: str, seats: list[str]) -> tuple[Response, bool]:
        r = c.post(f"/sessions/{self.p['sessions'][event]}/release", {"seats": seats}, HTMX)
        return r, r.status == 200 and MINE not in r.body

    def checkout(self, c: Client, index: int, event: str = "") -> list[tuple[str, Response, bool]]:
        """The details form, its submit (reserve, pay at the box office), the order's page."""
        form = c.get("/checkout/")
        done = c.post(
            "/checkout/", {"name": f"Buyer {index}", "email": f"buyer{index}@example.org", "method": "box_office"}
        )
        location = done.headers.get("location", "")
        ok = done.status == 302 and "/orders/" in location
        steps = [("form", form, form.status == 200), ("submit", done, ok)]
        if ok:
            page = c.get(urllib.parse.urlsplit(location).path)
            steps.append(("order page", page, page.status == 200))
        return steps


class Pretix:
    name = "pretix"

    def __init__(self, params: dict):
        self.p = params
        self.org = params["organizer"]

    def _token(self, c: Client) -> str:
        return c.cookies.get("pretix_csrftoken", "")

    def whats_on(self, c: Client) -> Response:
        return c.get(f"/{self.org}/")

    def seat_map(self, c: Client, event: str) -> Response:
        return c.get(f"/{self.org}/{event}/")

    def hold(self, c: Client, event: str, seats: list[str]) -> tuple[Response, bool]:
        items = self.p["events"][event]["seats"]
        form = [("csrfmiddlewaretoken", self._token(c))] + [(f"seat_{items[s]}", s) for s in seats]
        r = c.post(f"/{self.org}/{event}/cart/add?ajax=1", form)
        return r, r.status == 200 and _json(r).get("success") is True

    def release(self, c: Client, event: str, seats: list[str]) -> tuple[Response, bool]:
        """The cart's "empty cart" button: both seats go (ours: the release of both)."""
        r = c.post(f"/{self.org}/{event}/cart/clear?ajax=1", {"csrfmiddlewaretoken": self._token(c)})
        return r, r.status == 200 and _json(r).get("success") is True

    def checkout(self, c: Client, index: int, event: str) -> list[tuple[str, Response, bool]]:
        """Its checkout flow as a browser walks it: start, contact details, payment method (manual:
        "pay at the box office"), confirm, the order's page."""
        base = f"/{self.org}/{event}/checkout"
        steps: list[tuple[str, Response, bool]] = []
        start = c.get(f"{base}/start")
        steps.append(("start", start, start.status == 302))
        questions = c.get(f"{base}/questions/")
        steps.append(("questions form", questions, questions.status == 200))
        answered = c.post(
            f"{base}/questions/",
            {"csrfmiddlewaretoken": self._token(c), "email": f"buyer{index}@example.org"},
        )
        steps.append(("questions submit", answered, answered.status == 302 and "/payment/" in _loc(answered)))
        payment = c.get(f"{base}/payment/")
        steps.append(("payment form", payment, payment.status == 200))
        chosen = c.post(f"{base}/payment/", {"csrfmiddlewaretoken": self._token(c), "payment": "manual"})
        steps.append(("payment submit", chosen, chosen.status == 302 and "/confirm/" in _loc(chosen)))
        confirm = c.get(f"{base}/confirm/")
        steps.append(("confirm form", confirm, confirm.status == 200))
        placed = c.post(f"{base}/confirm/?ajax=1", {"csrfmiddlewaretoken": self._token(c)})
        answer = _json(placed)
        redirect = answer.get("redirect") or ""
        ok = placed.status == 200 and answer.get("success") is True and bool(ORDER_PATH.search(redirect))
        steps.append(("confirm submit", placed, ok))
        if ok:
            url = urllib.parse.urlsplit(redirect)
            page = c.get(url.path + (f"?{url.query}" if url.query else ""))
            if page.status == 302:  # the order's link logs the browser in, then shows the page
                steps.append(("order link", page, True))
                url = urllib.parse.urlsplit(_loc(page))
                page = c.get(url.path + (f"?{url.query}" if url.query else ""))
            steps.append(("order page", page, page.status == 200))
        return steps


def _json(r: Response) -> dict:
    try:
        out = json.loads(r.body)
    except ValueError:
        return {}
    return out if isinstance(out, dict) else {}


def _loc(r: Response) -> str:
    return r.headers.get("location", "")
