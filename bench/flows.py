"""What each virtual client does (see bench/load.py). ``params`` holds ids and seat plans.

Seat POSTs are sent as htmx sends them (HX-Request), so the answer is the refreshed map (200),
exactly what a browser gets after a click.
"""

import json
import time
import urllib.request

from bson import ObjectId

from booking.core.domain import SessionStatus

from .load import Client, Sample, sample

HTMX = {"HX-Request": "true"}
# The halls' wheelchair spaces are held only for a buyer who says they need one (sales/holds.py):
# the load's buyers take them like any other seat, so every hold says so.
DECLARED = {"wheelchair": "1"}
MINE = b"held by you"


def hello(client: Client, index: int, params: dict):
    def step():
        return [sample("hello", client.get("/bench/hello"))]

    return step


def whats_on(client: Client, index: int, params: dict):
    def step():
        return [sample("q1", client.get("/"))]

    return step


def seat_map_page(client: Client, index: int, params: dict):
    path = f"/sessions/{params['map_session']}/"
    client.get(path)

    def step():
        return [sample("q2", client.get(path))]

    return step


def naive_map(client: Client, index: int, params: dict):
    path = f"/bench/naive/{params['map_session']}/"

    def step():
        return [sample("naive", client.get(path))]

    return step


def refresh_unchanged(client: Client, index: int, params: dict):
    path = f"/sessions/{params['map_session']}/map/"
    etag = client.get(path).headers["etag"]

    def step():
        return [sample("q3", client.get(path, {"If-None-Match": etag}), ok_statuses=(304,))]

    return step


def _pair(params: dict, index: int) -> list[str]:
    pairs = params["pairs"]
    if index >= len(pairs):
        raise RuntimeError(f"only {len(pairs)} seat pairs for {index + 1} clients")
    return pairs[index]


def hold_release(client: Client, index: int, params: dict):
    """C1 then C2 on the same two seats, forever: every hold and release really changes the map."""
    session = params["hold_session"]
    seats = _pair(params, index)
    client.get(f"/sessions/{session}/")  # the CSRF cookie, as a browser has it

    def step():
        held = client.post(f"/sessions/{session}/hold", {"seats": seats, **DECLARED}, HTMX)
        released = client.post(f"/sessions/{session}/release", {"seats": seats}, HTMX)
        one = sample("c1", held)
        one.ok = one.ok and MINE in held.body
        two = sample("c2", released)
        two.ok = two.ok and MINE not in released.body
        return [one, two]

    return step


def refresh_changed(client: Client, index: int, params: dict):
    """The live map after someone else changed it: 200 with the new map (its first viewer).

    Asked without the viewer's old ETag: a worker that read the version within the last half
    second answers that one 304 (web/live_versions.py), and the viewer gets the new map on a later
    refresh, read and built exactly as here (a version other than the kept one is read for)."""
    session = params["changed_session"]
    seats = _pair(params, index)
    path = f"/sessions/{session}/map/"
    client.get(f"/sessions/{session}/")
    other = Client(client_base(client), 10_000 + index)
    other.get(f"/sessions/{session}/")

    def step():
        out = []
        for action in ("hold", "release"):
            other.post(f"/sessions/{session}/{action}", {"seats": seats, **DECLARED}, HTMX)
            out.append(sample("q3_changed", client.get(path)))
        return out

    return step


def client_base(client: Client) -> str:
    return f"http://{client.host}:{client.port}"


def card_token(stripe_url: str) -> tuple[str, float]:
    """What Stripe.js does in the buyer's browser: a card token at (local)stripe with the
    publishable key. Returns its card's id and the seconds it took."""
    body = b"card[number]=4242424242424242&card[exp_month]=12&card[exp_year]=2034&card[cvc]=123&key=pk_test_bench"
    started = time.perf_counter()
    with urllib.request.urlopen(urllib.request.Request(f"{stripe_url}/v1/tokens", body), timeout=60) as answer:  # noqa: S310
        card = json.loads(answer.read())["card"]["id"]
    return card, time.perf_counter() - started


def stripe_seconds(response) -> float:
    """The time the server said it waited for Stripe (Server-Timing: stripe;dur=ms)."""
    timing = response.headers.get("server-timing", "")
    for part in timing.split(","):
        name, _, rest = part.strip().partition(";dur=")
        if name == "stripe" and rest:
            return float(rest) / 1000
    return 0.0


def checkout(client: Client, index: int, params: dict):
    """Hold a group of seats in a new cart, then buy it (C3) and pay by card, as the page does:
    a card token at localstripe (the browser's Stripe.js), then /orders/<ref>/pay. Stripe's share
    (the token, and the server's own calls from Server-Timing) is its own row, c3_stripe. Stops
    when its seats run out."""
    plan = list(params["checkout_plan"][index])
    for session, _seats in plan[:1]:
        client.get(f"/sessions/{session}/")

    def step():
        if not plan:
            return None
        session, seats = plan.pop(0)
        held = client.post(f"/sessions/{session}/hold", {"seats": seats, **DECLARED}, HTMX)
        bought = client.post("/checkout/", {"name": f"Buyer {index}", "email": f"buyer{index}@example.org"})
        one = sample("c1_new_cart", held)
        one.ok = one.ok and MINE in held.body
        three = sample("c3", bought, ok_statuses=(302,))
        location = bought.headers.get("location", "")
        three.ok = three.ok and "/orders/" in location
        if not three.ok:
            return [one, three]
        means, token_s = card_token(params["stripe_url"])
        paid = client.post(location.rstrip("/") + "/pay", {"payment_method": means})
        pay = sample("c3_pay", paid)
        pay.ok = pay.ok and b'"status": "paid"' in paid.body
        stripe_s = token_s + stripe_seconds(bought) + stripe_seconds(paid)
        return [one, three, pay, Sample("c3_stripe", stripe_s, 0, pay.ok, 200, 0)]

    return step


# buyers with seats held that a client of checkout_box_office prepares: more than a client checks
# out in the 5 s window (one did 250 in under 5 s on a 2-core Xeon)
BUYERS_PER_CLIENT = 400


def checkout_box_office(client: Client, index: int, params: dict):
    """The goal row, **a buyer with seats held checks out** at the box office (C3 box
    office): a confirmed reservation, the order's page next (302). No provider is called: our own
    checkout alone. Each step is another buyer (cookies and address of their own, as separate
    people are) who holds 2 seats in a new cart during the setup, before the window: the window
    times checkouts only, as the hold row times holds. Stops when its buyers run out (then
    bench/run.py fails the run: the window would not be full of work)."""
    plan = list(params["box_office_plan"][index])[: params.get("box_office_buyers", BUYERS_PER_CLIENT)]
    shared_csrf = None
    buyers: list[tuple[dict, str]] = []
    for n, (session, seats) in enumerate(plan):
        client.cookies = {"csrftoken": shared_csrf} if shared_csrf else {}
        client.address = buyer_address(index, n)
        if shared_csrf is None:
            client.get(f"/sessions/{session}/")  # the CSRF cookie, as a browser has it
            shared_csrf = client.cookies["csrftoken"]
        held = client.post(f"/sessions/{session}/hold", {"seats": seats, **DECLARED}, HTMX)
        if held.status != 200 or MINE not in held.body:
            raise RuntimeError(f"buyer {n} of client {index}: hold answered {held.status}")
        buyers.append((dict(client.cookies), client.address))
    form = {"name": f"Buyer {index}", "email": f"buyer{index}@example.org", "method": "box_office"}
    client.cookies, client.address = buyers.pop(0)
    client.post("/checkout/", form)  # untimed: the worker's first (its publisher's connection, a theater's VAT)

    def step():
        if not buyers:
            return None
        client.cookies, client.address = buyers.pop(0)
        bought = client.post("/checkout/", form)
        three = sample("c3_box_office", bought, ok_statuses=(302,))
        three.ok = three.ok and "/orders/" in bought.headers.get("location", "")
        return [three]

    return step


def buyer_address(index: int, n: int) -> str:
    """An address of its own for buyer ``n`` of client ``index``, apart from the clients' 10.x
    addresses (172.16.0.0/12)."""
    k = index * 1000 + n + 1
    return f"172.{16 + (k >> 16)}.{(k >> 8) & 255}.{k & 255}"


def hold_then_checkout_box_office(client: Client, index: int, params: dict):
    """The same checkout with its hold in the same loop (C1 then C3, box office), as the row was
    before second round: one client buys group after group, so the rate is of the two
    requests together. Kept beside the goal row for comparison; stops when its seats run out."""
    plan = list(params["box_office_loop_plan"][index])
    for session, _seats in plan[:1]:
        client.get(f"/sessions/{session}/")

    def step():
        if not plan:
            return None
        session, seats = plan.pop(0)
        held = client.post(f"/sessions/{session}/hold", {"seats": seats, **DECLARED}, HTMX)
        form = {"name": f"Buyer {index}", "email": f"buyer{index}@example.org", "method": "box_office"}
        bought = client.post("/checkout/", form)
        one = sample("c1_box_office_loop", held)
        one.ok = one.ok and MINE in held.body
        three = sample("c3_box_office_loop", bought, ok_statuses=(302,))
        three.ok = three.ok and "/orders/" in bought.headers.get("location", "")
        return [one, three]

    return step


def db_floor(client: Client, index: int, params: dict):
    """The database's floor: the hold's session update sent with bare pymongo (no Django, no reads),
    then the release's, on a session document of the same shape. Only the hold update is timed."""
    import pymongo

    coll = pymongo.MongoClient(params["mongodb_uri"])[params["db_name"]]["sessions"]
    session_id = ObjectId(params["floor_session"])
    (r0, c0), (r1, c1) = (tuple(int(x) for x in key.split(":")) for key in _pair(params, index))
    cells = {f"seats.{r0}.{c0}": 1, f"seats.{r1}.{c1}": 1}
    free = {k: 0 for k in cells}
    cart_id = ObjectId()
    keys = _pair(params, index)

    def step():
        started = time.perf_counter()
        result = coll.update_one(
            {"_id": session_id, "status": SessionStatus.ON_SALE, **free, "reservations._id": {"$ne": cart_id}},
            {
                "$set": cells,
                "$inc": {"seatsAvailable": -2, "version": 1},
                "$push": {"reservations": {"_id": cart_id, "seats": keys, "total": 0, "v": "x"}},
            },
        )
        elapsed = time.perf_counter() - started
        coll.update_one(
            {"_id": session_id, "reservations._id": cart_id},
            {"$set": free, "$inc": {"seatsAvailable": 2, "version": 1}, "$pull": {"reservations": {"_id": cart_id}}},
        )
        return [Sample("db_floor", elapsed, 0, result.modified_count == 1, 0, 0)]

    return step


def get_page(client: Client, index: int, params: dict):
    """GET ``params["path"]``, timed as ``params["label"]`` (the stadium's pages)."""
    path, label = params["path"], params["label"]
    client.get(path)

    def step():
        return [sample(label, client.get(path))]

    return step
