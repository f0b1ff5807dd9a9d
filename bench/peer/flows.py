"""The peer run's virtual buyers (bench/load.py's closed-loop clients), the same for both systems:
``params["system"]`` is a bench.peer.systems.Ours or Pretix, which knows each one's URLs and forms."""

import random
import time

from ..load import Client, Sample


def _s(label: str, r, ok: bool) -> Sample:
    return Sample(label, r.seconds, r.server_us, ok, r.status, len(r.body))


def whats_on(client: Client, index: int, params: dict):
    system = params["system"]

    def step():
        r = system.whats_on(client)
        return [_s("whats_on", r, r.status == 200)]

    return step


def seat_map(client: Client, index: int, params: dict):
    system = params["system"]
    system.seat_map(client, "grand")

    def step():
        r = system.seat_map(client, "grand")
        return [_s("seat_map", r, r.status == 200)]

    return step


def hold_release(client: Client, index: int, params: dict):
    """Hold two seats side by side, release them, again and again (each client its own pair)."""
    system = params["system"]
    pairs = params["pairs"]
    if index >= len(pairs):
        raise RuntimeError(f"only {len(pairs)} seat pairs for {index + 1} clients")
    seats = pairs[index]
    system.seat_map(client, "grand")  # cookies (session, CSRF) as a browser has them

    def step():
        held, ok1 = system.hold(client, "grand", seats)
        released, ok2 = system.release(client, "grand", seats)
        return [_s("hold", held, ok1), _s("release", released, ok2)]

    return step


def checkout(client: Client, index: int, params: dict):
    """Hold two seats in a new cart, then every checkout request to the confirmed order's page.
    "checkout" is the whole checkout (first request to the order page) as one sample, counted once
    per confirmed order; "checkout request" each of its requests."""
    system = params["system"]
    plan = list(params["checkout_plan"][index])
    if plan:
        system.seat_map(client, plan[0][0])

    def step():
        if not plan:
            return None
        event, seats = plan.pop(0)
        held, ok = system.hold(client, event, seats)
        out = [_s("hold (new cart)", held, ok)]
        if not ok:
            return out
        started = time.perf_counter()
        steps = system.checkout(client, index, event)
        seconds = time.perf_counter() - started
        out += [_s("checkout request", r, good) for _name, r, good in steps]
        done = all(good for _name, _r, good in steps) and steps[-1][0] == "order page"
        out.append(Sample("checkout", seconds, 0, done, 200 if done else 500, 0))
        return out

    return step


def rush_buyer(client: Client, index: int, params: dict):
    """One of the rush's buyers: opens the seat map page, then tries the hall's pairs of seats side
    by side in an order of its own until one hold succeeds (or every pair failed: sold out), then
    checks out. The same blind choice for both systems (pretix's core renders no seat map to pick
    free seats from). Once every pair is sold (a counter shared by all buyers) the rest stop, as
    buyers who see "sold out" do. Timestamps (epoch seconds, in ``seconds``) of its start and its order."""
    system = params["system"]
    slots = list(params["rush_slots"])
    random.Random(index).shuffle(slots)

    def step():
        began = time.time()
        out = [Sample("_began_at", began, 0, True)]
        page = system.seat_map(client, "rush")
        out.append(_s("rush seat map", page, page.status == 200))
        for seats in slots:
            if params["rush_orders"].value >= len(slots):
                break  # sold out: the buyer sees it (both systems alike) and stops trying
            held, ok = system.hold(client, "rush", seats)
            out.append(_s("rush hold", held, held.status == 200))  # a refusal is an honest answer
            if not ok:
                continue
            steps = system.checkout(client, index, "rush")
            out += [_s("rush checkout request", r, good) for _name, r, good in steps]
            if all(good for _name, _r, good in steps) and steps[-1][0] == "order page":
                out.append(Sample("_bought_at", time.time(), 0, True))
                with params["rush_orders"].get_lock():
                    params["rush_orders"].value += 1
            else:
                out.append(Sample("rush checkout failed", 0, 0, False))
            break
        out.append(Sample("_ended_at", time.time(), 0, True))
        return out

    return step
