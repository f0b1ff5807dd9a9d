"""Simulated buyers over HTTP, as a browser with htmx would talk to the site.

Each buyer has its own httpx client (its own cookie jar) and its own client address (sent in
X-Forwarded-For; the harness runs the app with one trusted proxy). A buyer opens the session page
(which sets the CSRF cookie), then POSTs the htmx endpoints with the X-CSRFToken and HX-Request
headers, and checks out through the plain form, exactly like the pages do. What each buyer saw
is recorded in ``Stats``; the final checks compare it with the database.

Buyer kinds (most want the same middle seats, so picks overlap):
- rusher: holds a few seats around the middle, retries with another pick when beaten;
- best: asks for the best N seats;
- clicker: clicks seats one by one on the map (toggle), sometimes clicks one off again (release);
- slowpoke: holds, then waits about as long as the hold lasts before checking out (expiry races
  checkout);
- hoarder: several buyers sharing one address, trying to hold far more than allowed (the limits
  must answer 400/429).
Each ends by checking out, abandoning the cart, or canceling it.

Checking out is followed by paying by card, as the page's Stripe.js would: a card token made at
localstripe with the publishable key, then ``/orders/<ref>/pay``. A share of buyers' cards are
declined (most then try another card, some give up and let the order expire), a share go
through 3-D Secure, and a share finish 3-D Secure only after their payment window has ended (the
seats are bought if still free, else the money goes back). localstripe's webhook races the
buyers' own status checks.
"""

import asyncio
import ipaddress
import random
import re
import time
from collections import Counter
from dataclasses import dataclass, field

import httpx

NOTICE_RE = re.compile(r'id="notice"[^>]*>(.*?)</div>', re.S)
SEAT_COUNT_RE = re.compile(r"Total \((\d+) seats?\)")
ORDER_PATH_RE = re.compile(r"/orders/([A-Z0-9]{4,16})/$")
SEAT_BUTTON_RE = re.compile(r'<button class="s ([^"]*)" name="seat" value="(\d+):(\d+)"([^>]*)>')
MAX_ATTEMPTS = 6  # per logical request, over 503s and dropped connections
VISA, DECLINED, THREE_D_SECURE = "4242424242424242", "4000000000000341", "4000002760003184"
PUBLISHABLE_KEY = "pk_test_chaos"
WAVE_SECONDS = 5


@dataclass
class Hall:
    """What a buyer knows of the hall: which cells are seats (from the seeded layout)."""

    session_id: str
    seats_by_row: list[list[int]]  # column indexes of real seats, per row

    @property
    def middle_row(self) -> float:
        return (len(self.seats_by_row) - 1) / 2

    def centre_block(self, count: int) -> list[str]:
        """The ``count`` seats everybody wants first: the middle of the middle row."""
        row = int(self.middle_row)
        cols = self.seats_by_row[row]
        start = (len(cols) - count) // 2
        return [f"{row}:{c}" for c in cols[start : start + count]]

    def middle_block(self, rng: random.Random, count: int) -> list[str]:
        """``count`` adjacent seats close to the middle of the hall (a gaussian pick: overlaps)."""
        for _ in range(20):
            row = int(round(rng.gauss(self.middle_row, len(self.seats_by_row) / 6)))
            if not 0 <= row < len(self.seats_by_row):
                continue
            cols = self.seats_by_row[row]
            if len(cols) < count:
                continue
            centre = (len(cols) - count) / 2
            start = int(round(rng.gauss(centre, max(1.0, len(cols) / 8))))
            start = min(max(start, 0), len(cols) - count)
            block = cols[start : start + count]
            if block[-1] - block[0] == count - 1:  # no aisle inside the block
                return [f"{row}:{c}" for c in block]
        row = rng.randrange(len(self.seats_by_row))
        return [f"{row}:{self.seats_by_row[row][0]}"]


def free_seats(html: str) -> dict[int, list[int]]:
    """The seats a buyer sees as free on a rendered map: row -> columns."""
    free: dict[int, list[int]] = {}
    for classes, row, col, rest in SEAT_BUTTON_RE.findall(html):
        if "aria-disabled" in rest or classes.split()[0] == "me":
            continue
        free.setdefault(int(row), []).append(int(col))
    return free


def pick_free_block(hall: "Hall", free: dict[int, list[int]], count: int, rng: random.Random) -> list[str] | None:
    """What a person does after losing a seat: look at the map and take ``count`` free seats side
    by side, as central as possible (one of the few best, so buyers still collide)."""
    candidates = []
    for row, cols in free.items():
        cols = sorted(cols)
        seat_cols = hall.seats_by_row[row]
        centre = (seat_cols[0] + seat_cols[-1]) / 2
        for i in range(len(cols) - count + 1):
            block = cols[i : i + count]
            if block[-1] - block[0] == count - 1:
                middle = (block[0] + block[-1]) / 2
                score = abs(row - hall.middle_row) * 2 + abs(middle - centre)
                candidates.append((score, row, block))
    if not candidates:
        return None
    candidates.sort()
    _, row, block = rng.choice(candidates[:4])
    return [f"{row}:{c}" for c in block]


@dataclass
class Stats:
    buyers: int = 0
    requests: int = 0
    statuses: Counter = field(default_factory=Counter)
    transport_errors: int = 0
    retries: int = 0
    holds_won: int = 0
    holds_lost: int = 0
    holds_refused: int = 0  # 400: a rule said no (orphan seat, limits, ...)
    rate_limited: int = 0
    releases: int = 0
    checkouts_ok: int = 0
    checkouts_failed: int = 0  # the hold ended first (expected with a short hold)
    checkouts_unknown: int = 0  # no answer after every retry
    replays: int = 0
    abandoned: int = 0
    empty_handed: int = 0
    canceled: int = 0
    cut_off: int = 0
    kinds: Counter = field(default_factory=Counter)
    server_errors: list = field(default_factory=list)  # (method, path, status)
    retry_after_missing: int = 0  # 503 without a Retry-After hint
    # booking ref -> seats the buyer's cart showed when it checked out (and paid)
    orders_seen: dict = field(default_factory=dict)
    payments_paid: int = 0
    paid_late: int = 0
    declined: int = 0
    gave_up_after_decline: int = 0
    three_d_secure: int = 0
    refunded_late: int = 0
    payment_other: Counter = field(default_factory=Counter)


def client_address(index: int) -> str:
    return str(ipaddress.IPv4Address(int(ipaddress.IPv4Address("10.0.0.1")) + index))


class Buyer:
    def __init__(
        self, index: int, base_url: str, hall: Hall, stats: Stats, rng: random.Random, *, ip: str, hold_s, stripe_url
    ):
        self.index = index
        self.stripe = httpx.AsyncClient(base_url=stripe_url, timeout=httpx.Timeout(25.0, connect=10.0))
        self.hall = hall
        self.stats = stats
        self.rng = rng
        self.hold_seconds = hold_s
        self.client = httpx.AsyncClient(
            base_url=base_url,
            timeout=httpx.Timeout(25.0, connect=10.0),
            headers={"X-Forwarded-For": ip, "User-Agent": f"chaos-buyer/{index}"},
            follow_redirects=False,
        )
        self.cart_seats = 0
        self.last_map = ""

    # --- HTTP with the retries a browser user would do ---

    async def request(self, method: str, url: str, *, htmx: bool = False, data=None, headers=None):
        """One logical request: retried after a 503 (honouring Retry-After) or a dropped
        connection. Returns the response, or None when it never got an answer."""
        extra = dict(headers or {})
        if method == "POST":
            extra["X-CSRFToken"] = self.client.cookies.get("csrftoken", "")
        if htmx:
            extra["HX-Request"] = "true"
        for attempt in range(MAX_ATTEMPTS):
            if attempt:
                self.stats.retries += 1
            self.stats.requests += 1
            try:
                response = await self.client.request(method, url, data=data, headers=extra)
            except httpx.TransportError:
                self.stats.transport_errors += 1
                await asyncio.sleep(0.5 + self.rng.random())
                continue
            self.stats.statuses[response.status_code] += 1
            if response.status_code >= 500:
                if response.status_code != 503:
                    self.stats.server_errors.append((method, url, response.status_code))
                    return response
                hint = response.headers.get("Retry-After")
                if hint is None:
                    self.stats.retry_after_missing += 1
                await asyncio.sleep(min(float(hint or 2), 5) * (0.5 + self.rng.random()))
                continue
            return response
        return None

    async def open_session_page(self) -> bool:
        response = await self.request("GET", f"/sessions/{self.hall.session_id}/")
        return response is not None and response.status_code == 200 and "csrftoken" in self.client.cookies

    async def seat_action(self, endpoint: str, data: dict) -> str:
        """POST a seat action the way htmx does. Returns won / lost / refused / limited / error."""
        response = await self.request("POST", f"/sessions/{self.hall.session_id}/{endpoint}", htmx=True, data=data)
        if response is None:
            return "error"
        if response.status_code == 429:
            self.stats.rate_limited += 1
            return "limited"
        if response.status_code == 400:
            self.stats.holds_refused += 1
            return "refused"
        if response.status_code != 200:
            return "error"
        match = SEAT_COUNT_RE.search(response.text)
        self.cart_seats = int(match.group(1)) if match else 0
        # a hold or release that went through answers with the changed seats only, not the map
        self.last_map = response.text if 'id="seatmap"' in response.text else ""
        notice = NOTICE_RE.search(response.text)
        if notice and "msg-error" in notice.group(1):
            return "lost"
        return "won"

    async def hold(self, seats: list[str]) -> str:
        outcome = await self.seat_action("hold", {"seats": ",".join(seats)})
        self._count(outcome)
        return outcome

    def _count(self, outcome: str) -> None:
        if outcome == "won":
            self.stats.holds_won += 1
        elif outcome == "lost":
            self.stats.holds_lost += 1

    async def think(self, low: float = 0.2, high: float = 1.5) -> None:
        await asyncio.sleep(self.rng.uniform(low, high))

    # --- endings ---

    async def checkout(self) -> None:
        if self.cart_seats == 0:
            self.stats.empty_handed += 1  # every pick was beaten: nothing to buy
            return
        seats = self.cart_seats
        response = await self.request(
            "POST",
            "/checkout/",
            data={"name": f"Buyer {self.index} <script>alert(1)</script>", "email": f"buyer{self.index}@example.org"},
        )
        if response is None:
            self.stats.checkouts_unknown += 1
            return
        match = ORDER_PATH_RE.search(response.headers.get("Location", "")) if response.status_code == 302 else None
        if match is None:
            self.stats.checkouts_failed += 1
            return
        ref = match.group(1)
        self.stats.checkouts_ok += 1
        self.cart_seats = 0
        await self.request("GET", f"/orders/{ref}/")
        state = await self.pay(ref)
        if state != "paid":
            return
        self.stats.orders_seen[ref] = seats
        if self.rng.random() < 0.1:  # a double submit after success must not buy again
            self.stats.replays += 1
            again = await self.request("POST", "/checkout/", data={"name": "Again", "email": "again@example.org"})
            again_ref = ORDER_PATH_RE.search(again.headers.get("Location", "")) if again is not None else None
            if again_ref and again_ref.group(1) != ref:
                self.stats.orders_seen[again_ref.group(1)] = 0  # flagged by the checks: a second order

    # --- paying, as the page's pay.js does with localstripe's Stripe.js ---

    async def card(self, number: str) -> str | None:
        data = {f"card[{k}]": v for k, v in (("number", number), ("exp_month", "12"), ("exp_year", "2034"))}
        data.update({"card[cvc]": "123", "key": PUBLISHABLE_KEY})
        try:
            token = await self.stripe.post("/v1/tokens", data=data)
            return token.json()["card"]["id"]
        except (httpx.HTTPError, KeyError, ValueError):
            return None

    async def pay_with(self, ref: str, number: str) -> dict:
        means = await self.card(number)
        if means is None:
            return {"status": "error"}
        response = await self.request("POST", f"/orders/{ref}/pay", data={"payment_method": means})
        if response is None:
            return {"status": "error"}
        try:
            return response.json()
        except ValueError:
            return {"status": f"http {response.status_code}"}

    async def authenticate(self, answer: dict) -> None:
        secret = answer.get("client_secret", "")
        intent = secret.split("_secret_")[0]
        try:
            await self.stripe.post(
                f"/v1/payment_intents/{intent}/_authenticate?success=true",
                json={"key": PUBLISHABLE_KEY, "client_secret": secret},
            )
        except httpx.HTTPError:
            pass

    async def order_state(self, ref: str) -> str:
        """What the page asks after 3-D Secure (the return page's check)."""
        for _ in range(10):
            response = await self.request("GET", f"/orders/{ref}/payment?format=json")
            if response is None or response.status_code != 200:
                return "error"
            answer = response.json()
            if answer.get("state") != "pending_payment" or answer.get("status") not in ("processing", "confirming"):
                return answer.get("state", "error")
            await asyncio.sleep(1)
        return "pending_payment"

    async def pay(self, ref: str) -> str:
        """Pay for the order; returns its state as the buyer last saw it."""
        roll = self.rng.random()
        late = roll < 0.12
        if 0.12 <= roll < 0.3:  # a declined card first
            answer = await self.pay_with(ref, DECLINED)
            self.stats.declined += answer.get("status") == "failed"
            if self.rng.random() < 0.3:
                self.stats.gave_up_after_decline += 1
                return "abandoned"  # the order expires with its window; the seats come back
            await self.think(0.3, 1.5)
        number = THREE_D_SECURE if late or self.rng.random() < 0.25 else VISA
        answer = await self.pay_with(ref, number)
        if answer.get("status") == "action":
            self.stats.three_d_secure += 1
            if late:  # on the bank's page until after the payment window (the hold) ended
                await asyncio.sleep(self.hold_seconds + self.rng.uniform(2, 12))
            await self.authenticate(answer)
            state = await self.order_state(ref)
        else:
            state = answer.get("state") or answer.get("status", "error")
        if state == "paid":
            self.stats.payments_paid += 1
            self.stats.paid_late += late
        elif state == "refunded":
            self.stats.refunded_late += 1
        else:
            self.stats.payment_other[state] += 1
        return state

    async def finish(self) -> None:
        roll = self.rng.random()
        if self.cart_seats == 0:
            self.stats.empty_handed += 1
        elif roll < 0.7:
            await self.checkout()
        elif roll < 0.9:
            self.stats.abandoned += 1  # walk away: expiry must give the seats back
        else:
            await self.request("POST", "/cart/cancel", data={})
            self.stats.canceled += 1

    # --- kinds ---

    async def look_at_map(self) -> dict[int, list[int]]:
        if not self.last_map:
            response = await self.request("GET", f"/sessions/{self.hall.session_id}/map/", htmx=True)
            self.last_map = response.text if response is not None and response.status_code == 200 else ""
        free = free_seats(self.last_map)
        self.last_map = ""
        return free

    async def rusher(self) -> None:
        count = self.rng.randint(1, 4)
        for attempt in range(4):
            if attempt == 0:
                first_choice = self.rng.random() < 0.6
                seats = self.hall.centre_block(count) if first_choice else self.hall.middle_block(self.rng, count)
            else:  # beaten: look at the map as it is now and pick again
                seats = pick_free_block(self.hall, await self.look_at_map(), count, self.rng)
                if seats is None:
                    break
            outcome = await self.hold(seats)
            if outcome in ("won", "limited"):
                break
            if outcome == "refused" and count > 1 and self.rng.random() < 0.5:
                count -= 1  # e.g. a single seat would be left alone: settle for fewer
            await self.think(0.3, 1.5)
        if self.cart_seats and self.rng.random() < 0.3:
            await self.think()
            await self.hold(self.hall.middle_block(self.rng, 1))
        await self.think()
        await self.finish()

    async def best(self) -> None:
        outcome = await self.seat_action("best", {"count": str(self.rng.randint(1, 4))})
        self._count(outcome)
        await self.think()
        await self.finish()

    async def clicker(self) -> None:
        clicked = []
        wanted = pick_free_block(self.hall, await self.look_at_map(), self.rng.randint(2, 3), self.rng)
        for seat in wanted or self.hall.middle_block(self.rng, 2):
            outcome = await self.seat_action("toggle", {"seat": seat})
            self._count(outcome)
            if outcome == "won":
                clicked.append(seat)
            await self.think(0.1, 0.6)
        if clicked and self.rng.random() < 0.4:
            seat = clicked[-1]
            outcome = await self.seat_action("release", {"seats": seat})
            if outcome == "won":
                self.stats.releases += 1
        await self.think()
        await self.finish()

    async def slowpoke(self) -> None:
        await self.hold(self.hall.middle_block(self.rng, self.rng.randint(1, 3)))
        # Check out right around the moment the hold ends: sometimes just before, sometimes after.
        await asyncio.sleep(max(0.0, self.hold_seconds + self.rng.uniform(-3, 3)))
        await self.checkout()

    async def hoarder(self) -> None:
        for _ in range(8):
            await self.hold(self.hall.middle_block(self.rng, 4))
        await self.finish()

    async def poll_map(self) -> None:
        """The live map's refresh: a conditional GET that should mostly answer 304."""
        response = await self.request("GET", f"/sessions/{self.hall.session_id}/map/", htmx=True)
        if response is not None and response.status_code == 200 and response.headers.get("ETag"):
            await self.request(
                "GET",
                f"/sessions/{self.hall.session_id}/map/",
                htmx=True,
                headers={"If-None-Match": response.headers["ETag"]},
            )

    async def run(self, kind: str, rush: asyncio.Event | None) -> None:
        self.stats.buyers += 1
        self.stats.kinds[kind] += 1
        try:
            if not await self.open_session_page():
                return
            if rush is not None:
                await rush.wait()  # the rush: everybody clicks at once
            await getattr(self, kind)()
            if self.rng.random() < 0.3:
                await self.poll_map()
        finally:
            await self.client.aclose()
            await self.stripe.aclose()


KINDS = [("rusher", 0.45), ("best", 0.2), ("clicker", 0.15), ("slowpoke", 0.12), ("hoarder", 0.08)]


def pick_kind(rng: random.Random) -> str:
    roll = rng.random()
    for kind, weight in KINDS:
        if roll < weight:
            return kind
        roll -= weight
    return "rusher"


async def run_buyers(
    base_url: str,
    hall: Hall,
    *,
    stripe_url: str,
    buyers: int,
    duration: float,
    hold_seconds: float,
    concurrency: int,
    seed: int,
    stats: Stats,
    rush_fraction: float = 0.4,
) -> Stats:
    """All buyers: a rush at the start, the rest arriving over the run; bounded in time."""
    rng = random.Random(seed)
    rush = asyncio.Event()
    gate = asyncio.Semaphore(concurrency)
    hoarder_ip = "192.0.2.77"  # hoarders share one address and keep throwing their cookies away
    rush_count = int(buyers * rush_fraction)
    started = time.monotonic()

    async def one(index: int, delay: float) -> None:
        await asyncio.sleep(delay)
        kind = pick_kind(rng)
        ip = hoarder_ip if kind == "hoarder" else client_address(index)
        buyer = Buyer(
            index, base_url, hall, stats, random.Random(rng.random()), ip=ip, hold_s=hold_seconds, stripe_url=stripe_url
        )
        if index < rush_count:
            await buyer.run(kind, rush)  # the rush does not wait for the gate: that is the point
            return
        async with gate:
            await buyer.run(kind, None)

    def arrival(index: int) -> float:
        if index < rush_count:
            return 0.0
        # The rest come in waves (a mail-out, a social post): each wave clicks nearly at once.
        wave = rng.randrange(max(1, int(duration * 0.75 / WAVE_SECONDS)))
        return 2 + wave * WAVE_SECONDS + rng.uniform(0, 0.3)

    tasks = [asyncio.create_task(one(i, arrival(i))) for i in range(buyers)]
    await asyncio.sleep(min(10.0, duration / 10))  # let the rush open the page
    rush.set()
    deadline = started + duration + 2 * hold_seconds + 60  # late payers wait out their window
    done, pending = await asyncio.wait(tasks, timeout=max(1.0, deadline - time.monotonic()))
    for task in pending:
        task.cancel()
    stats.cut_off += len(pending)
    if pending:
        await asyncio.wait(pending, timeout=10)
    for task in done:
        if task.exception() is not None:
            raise task.exception()
    return stats
