"""Every staff page, found the way staff find them: from the admin index and every parameter-less
staff URL, following the links and forms' GET targets the pages show, one of each document made
through the services so detail pages have real ids. A page added later is covered as soon as a
list links to it; ``unreached_routes`` names the staff URLs the walk did not get to.

Used by the German-completeness test (booking/tests/control/test_staff_pages_german.py) and the
phone-width browser test (tests/browser/test_staff_pages_phone.py)."""

import re
from dataclasses import dataclass
from datetime import timedelta
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

from django.contrib.auth.models import User
from django.test import Client
from django.urls import Resolver404, URLPattern, URLResolver, get_resolver, resolve

from booking.core import clock
from booking.payments import refunds, vouchers
from booking.reports import tills
from booking.sales import counter, holds, outbox, promos, subscriptions, waiting_room
from booking.sales.demo_stadium import create_match, create_stadium
from booking.tests.factories import make_session, make_theater
from booking.tests.order_support import at_counter, online
from booking.tests.paying import checkout_paid
from booking.web import api_tokens
from booking.webhooks import endpoints
from booking.webhooks.dispatch import dispatch

STAFF_PREFIXES = ("/admin/booking/", "/checkin/")
# Pages a walk must not open: signing out ends the walk's own session.
NEVER_OPEN = ("/admin/logout/", "/checkin/logout/")
VISITS_PER_ROUTE = 2  # two documents of a kind (a sold and a held one) show most variants of a page


@dataclass
class StaffDocuments:
    path_values: dict[str, list[str]]  # a path part's name -> values to try (an order's ref)
    pages: list[str]  # pages to open whatever else the walk opens of their kind (a refunded order)


def make_documents() -> StaffDocuments:
    """One or two of each kind of document the staff pages show, made through the services."""
    theater = make_theater(name="Globe")
    hamlet = make_session(theater, name="Hamlet", name_de="Hamlet")
    make_session(theater, name="Hamlet", name_de="Hamlet", days=8)  # a series of two
    faust = make_session(theater, name="Faust", days=2)
    holds.hold_seats(hamlet["_id"], "s:browsing", None, ["0:0", "0:1"])  # a cart still held
    sold = holds.hold_seats(hamlet["_id"], "s:olga", None, ["2:0", "2:1"])
    paid = checkout_paid("s:olga", sold.cart_id, "Olga Tokarczuk", "olga@example.org")
    online(faust, "s:ada", "0:0", "Ada Lovelace")  # waiting for its card payment
    refunded = holds.hold_seats(faust["_id"], "s:rosa", None, ["2:0", "2:1"])
    partly = checkout_paid("s:rosa", refunded.cart_id, "Rosa Luxemburg", "rosa@example.org")
    refunds.refund_tickets(partly["_id"], tickets=[partly["lines"][0]["ticket"]], reason="Sitz defekt", by="anna")
    cash_sale = at_counter(faust, "1:0", "Grace Hopper", counter.CASH)
    at_counter(hamlet, "1:0", "Press Desk", counter.COMPLIMENTARY)
    stadium = create_stadium("Test Stadium", seats=3 * 40, rows=4, half=5)
    create_match(stadium)
    now = clock.now()
    waiting_room.enable(faust["_id"], opens_at=now, on_sale_at=now + timedelta(hours=1), rate=60)
    promos.create_code("SPRING-24", "percent", 10, cap=5)
    promos.generate_batch(3, "amount", 500, prefix="GIFT")
    subscriptions.create_subscription(
        name="Season A",
        name_de="Abo A",
        session_ids=[hamlet["_id"], faust["_id"]],
        prices={"s": 3000, "p": 5000},
        sale_opens=now - timedelta(hours=1),
        sale_closes=now + timedelta(hours=12),
    )
    api_tokens.create_token(theater_id=theater["_id"], name="Kassen-App", scopes=[api_tokens.READ_ORDERS], by="boss")
    endpoints.create_endpoint(
        theater_id=theater["_id"], url="https://crm.example.org/hooks", events=[outbox.ORDER_PAID], by="boss"
    )
    dispatch(outbox.ORDERS, paid["_id"])  # a delivery waiting to be sent
    vouchers.issue(value=5000, sold_via="counter", now=now, by="anna", buyer="Carla Gift")
    till = tills.open_till("anna")  # the cash seller of at_counter
    tills.close(till="anna", seller="anna", counted=till.expected + 100, seq=till.seq)
    return StaffDocuments(
        path_values={"ref": [cash_sale["ref"]]},  # what no page links to: the counter's "sold" page
        pages=[f"/admin/booking/order/{order['_id']}/change/" for order in (paid, partly, cash_sale)],
    )


def superuser_client(language: str = "de") -> tuple[Client, User]:
    boss = User.objects.create_superuser("boss", "boss@theater.example", None)
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(boss)
    return client, boss


class _Links(HTMLParser):
    """The URLs a page offers: links, and the targets of its GET forms."""

    def __init__(self):
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        found = dict(attrs)
        if tag == "a" and found.get("href"):
            self.urls.append(found["href"])
        elif tag == "form" and (found.get("method") or "get").lower() == "get" and found.get("action"):
            self.urls.append(found["action"])


def staff_routes() -> list[tuple[str, str]]:
    """(route, URL name) of every staff URL: the booking admin's and the door's."""
    routes = []

    def walk(patterns, prefix, namespace):
        for p in patterns:
            if isinstance(p, URLResolver):
                walk(p.url_patterns, prefix + str(p.pattern), p.namespace or namespace)
            elif isinstance(p, URLPattern) and "(?P" not in str(p.pattern):
                route = prefix + str(p.pattern)
                if route.startswith(STAFF_PREFIXES):
                    routes.append((route, f"{namespace}:{p.name}"))

    walk(get_resolver().url_patterns, "/", "")
    return routes


def route_name(path: str) -> str | None:
    try:
        match = resolve(path)
    except Resolver404:
        return None
    return match.view_name


@dataclass
class StaffPage:
    path: str
    route: str  # the URL's name, e.g. "admin:booking_order_change"
    html: str


class StaffWalk:
    """Walks the staff site as one user: ``pages`` are the HTML pages it rendered, ``answers``
    the URL names that answered a GET with something else (405 for a POST-only action, a PDF, a
    redirect), with the status and content type."""

    def __init__(self, client: Client, documents: StaffDocuments):
        self.client = client
        self.documents = documents
        self.pages: list[StaffPage] = []
        self.answers: dict[str, str] = {}
        self._seen: set[str] = set()
        self._per_route: dict[str, int] = {}

    def walk(self) -> list[StaffPage]:
        """Every HTML staff page reachable from the admin index and the parameter-less staff
        URLs, at most VISITS_PER_ROUTE of each URL name; then each staff URL no page links to,
        asked about the documents of its kind the walk met (and the documents' ``path_values``)."""
        self._crawl(["/admin/", "/admin/booking/"] + [r for r, _ in staff_routes() if "<" not in r])
        self._crawl(list(self.documents.pages), limit=False)
        values = {name: list(found) for name, found in self.documents.path_values.items()}
        for path in sorted(self._seen):
            found = re.match(r"^/admin/booking/(\w+)/([0-9a-f]{24})/", path)
            if found:
                values.setdefault(f"{found.group(1)}:object_id", []).append(found.group(2))
        queue = []
        for route, name in staff_routes():
            if name in self._per_route or name in self.answers or "<" not in route:
                continue
            kind = route.split("/")[3] if route.startswith("/admin/booking/") else ""
            parts = re.findall(r"<(?:\w+:)?(\w+)>", route)
            # a part with no value: any, so that a POST-only action still says 405 (before it looks)
            choices = [values.get(f"{kind}:{part}") or values.get(part) or ["1"] for part in parts]
            for first in choices[0]:  # each document of the kind: a page may be for some only
                filled = re.sub(rf"<(?:\w+:)?{parts[0]}>", first, route)
                for part, options in zip(parts[1:], choices[1:], strict=True):
                    filled = re.sub(rf"<(?:\w+:)?{part}>", options[0], filled)
                queue.append(filled)
        self._crawl(queue)
        return self.pages

    def unreached(self) -> list[str]:
        """The staff URL names the walk could neither render nor get another answer from than 404
        (a path part it has no value for)."""
        done = {page.route for page in self.pages} | set(self.answers)
        return sorted({name for _, name in staff_routes()} - done)

    def _crawl(self, queue: list[str], limit: bool = True) -> None:
        forced = set() if limit else set(queue)  # opened whatever else of their kind was (not what they link to)
        while queue:
            path = queue.pop(0)
            if path in self._seen or path in NEVER_OPEN:
                continue
            name = route_name(urlsplit(path).path)
            if name is None or (path not in forced and self._per_route.get(name, 0) >= VISITS_PER_ROUTE):
                continue  # not seen: a page to open later may still ask for it
            self._seen.add(path)
            response = self.client.get(path)
            assert response.status_code < 500, (path, response.status_code)
            kind = response.get("Content-Type", "")
            if response.status_code != 200 or not kind.startswith("text/html"):
                if response.status_code != 404:  # 404: no such document, so not asked yet
                    self.answers.setdefault(name, f"{response.status_code} {kind}")
                continue
            self._per_route[name] = self._per_route.get(name, 0) + 1
            html = response.content.decode()
            self.pages.append(StaffPage(path, name, html))
            queue += [target for target in links_on(path, html) if target not in self._seen]


def links_on(path: str, html: str) -> list[str]:
    """The staff URLs a page links to (Django's own user and lock-out pages left out)."""
    parser = _Links()
    parser.feed(html)
    found = []
    for url in parser.urls:
        parts = urlsplit(urljoin(path, url))
        if parts.netloc or not parts.path.startswith(STAFF_PREFIXES + ("/admin/",)):
            continue
        if parts.path.startswith(("/admin/auth/", "/admin/axes/", "/admin/r/", "/admin/jsi18n")):
            continue  # Django's own pages and the lock-out program's, translated by them
        found.append(parts.path + (f"?{parts.query}" if parts.query else ""))
    return found
