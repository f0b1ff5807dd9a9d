"""The seed's load scenario (mongodb-schema-simulator, theater), at the service level.

Users arrive open-loop, ``rate`` per second in each of ``processes`` processes, ``users`` in all;
each creates a cart by holding 5 seats, checks out and pays by card (at localstripe). Engine
calls (the code the web views call), not HTTP: this measures the data model under contention, as
the seed's simulator did.

- ``disjoint``: every user has 5 seats of their own (blocks of 5, spread over several sessions).
- ``overlap``: everyone on one 900-seat session; each user looks at the map, picks 5 free seats
  side by side at random and tries again (up to 10 times) when someone was faster; with no 5
  free seats side by side left, the user gets the honest "sold out" answer.
"""

import multiprocessing
import random
import threading
import time
from dataclasses import dataclass, field

from bson import ObjectId

from booking.core.errors import NoAdjacentSeats, OrphanSeat, SeatsTaken
from booking.payments import flow as payments
from booking.sales import holds, selectors
from booking.venues.seat_grid import FREE, seat_key

HONEST = (SeatsTaken, OrphanSeat, NoAdjacentSeats)
ATTEMPTS = 10  # a buyer tries again while seats are left, as people do


@dataclass
class Outcome:
    flow: float = 0.0  # seconds from arrival to the order (or to giving up)
    hold: float = 0.0
    checkout: float = 0.0
    result: str = "ok"  # ok | conflict | failed
    error: str = ""
    attempts: int = 0


@dataclass
class ScenarioResult:
    variant: str
    outcomes: list = field(default_factory=list)
    seconds: float = 0.0
    breaches: list = field(default_factory=list)


def random_pick(session: dict, rng: random.Random) -> list[str] | None:
    """5 free seats side by side that leave no seat alone, chosen at random from the map."""
    options = []
    for r, states in enumerate(session["seats"]):
        run_start = None
        for c, state in enumerate([*states, -1]):
            if state == FREE and run_start is None:
                run_start = c
            elif state != FREE and run_start is not None:
                for left in range(run_start, c - 4):
                    if left - run_start != 1 and c - (left + 5) != 1:
                        options.append((r, left))
                run_start = None
    if not options:
        return None
    r, left = rng.choice(options)
    return [seat_key(r, c) for c in range(left, left + 5)]


def _user(variant: str, plan, index: int, outcomes: list, rng: random.Random):
    arrived = time.perf_counter()
    out = Outcome()
    owner = f"s:sim{index}"
    try:
        hold_started = time.perf_counter()
        result = None
        while out.attempts < ATTEMPTS and result is None:
            out.attempts += 1
            if variant == "disjoint":
                session_id, seats = plan
            else:
                session_id = plan
                session = selectors.get_session(session_id)  # the buyer looks at the map (Q2)
                seats = random_pick(session, rng)
                if seats is None:
                    raise NoAdjacentSeats("sold out")
            try:
                # like the HTTP load's buyers (bench/flows.py DECLARED), they take a wheelchair
                # space they picked as a buyer who needs it
                result = holds.hold_seats(session_id, owner, None, seats, needs_wheelchair=True)
            except HONEST:
                if variant == "disjoint" or out.attempts >= ATTEMPTS:
                    raise
        out.hold = time.perf_counter() - hold_started
        checkout_started = time.perf_counter()
        order = payments.start(owner, result.cart_id, f"User {index}", f"user{index}@example.org")
        paid = payments.pay_with_card(order["_id"], owner, "pm_card_visa")  # Stripe's test card, at localstripe
        if paid.status != "paid":
            raise RuntimeError(f"payment {paid.status}: {paid.message}")
        out.checkout = time.perf_counter() - checkout_started
    except HONEST as exc:
        out.result, out.error = "conflict", type(exc).__name__
    except Exception as exc:  # noqa: BLE001 - every other outcome is a failed flow, reported
        out.result, out.error = "failed", f"{type(exc).__name__}: {exc}"
    out.flow = time.perf_counter() - arrived
    outcomes.append(out)


def _process(variant, plans, first_index, rate, start_at, queue, seed):
    from booking.core import mongo

    mongo.close_client()
    rng = random.Random(seed)
    outcomes: list[Outcome] = []
    threads = []
    while time.time() < start_at:
        time.sleep(0.001)
    began = time.perf_counter()
    for n, plan in enumerate(plans):
        due = began + n / rate
        delay = due - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        t = threading.Thread(target=_user, args=(variant, plan, first_index + n, outcomes, rng))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    queue.put(outcomes)


def run(variant: str, plans: list, processes: int = 4, rate: float = 50.0) -> ScenarioResult:
    """``plans``: one per user: (session id, seats) for disjoint, a session id for overlap."""
    from booking.upkeep.invariants import check_invariants

    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    start_at = time.time() + 1.0
    per = [plans[p::processes] for p in range(processes)]
    procs = [
        ctx.Process(target=_process, args=(variant, per[p], p * 100_000, rate, start_at, queue, p))
        for p in range(processes)
    ]
    for p in procs:
        p.start()
    result = ScenarioResult(variant)
    for _ in procs:
        result.outcomes.extend(queue.get())
    for p in procs:
        p.join()
    result.seconds = time.time() - start_at
    result.breaches = check_invariants()
    return result


def disjoint_plans(sessions: list[dict], users: int) -> list[tuple[ObjectId, list[str]]]:
    """Blocks of exactly 5 seats (the scenario hall is built that way), one per user."""
    from .data import blocks

    plans = []
    for session in sessions:
        for r, start, end in blocks(session):
            if end - start == 5:
                plans.append((session["_id"], [seat_key(r, c) for c in range(start, end)]))
    if len(plans) < users:
        raise RuntimeError(f"only {len(plans)} blocks of 5 for {users} users")
    return plans[:users]


# 20 rows of four blocks of 5 seats: 400 seats, 80 users per session.
DISJOINT_GRID = "\n".join("sssss.sssss..sssss.sssss" for _ in range(20))
