"""The benchmark run: accounting pass, timed runs, floors, render CPU, expiry sweep, seed scenario,
stadium. Returns a plain dict that bench/report.py turns into Markdown, JSON and a chart."""

import gc
import os
import platform
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from booking.core.domain import SessionStatus

from . import data, flows, load, scenario, subscription
from .load import Client, percentile
from .stack import GUNICORN_ARGS, Stack

ACCOUNT = {"X-Bench-Account": "1"}


@dataclass
class Size:
    name: str
    table_clients: int
    sweep: tuple
    seconds: float
    users: int
    stale_carts: int
    stadium_seats: int
    warmup: float


FULL = Size("full", 10, (1, 10, 25, 50), 5.0, 1000, 10_000, 100_000, 3.0)
SMALL = Size("small", 2, (1, 2), 0.3, 40, 60, 2_000, 0.3)

# The table's timed flows by name (``python -m bench --only whats_on,checkout_box_office``).
TABLE_FLOWS = (
    flows.hello,
    flows.whats_on,
    flows.seat_map_page,
    flows.refresh_unchanged,
    flows.refresh_changed,
    flows.hold_release,
    flows.checkout,
    flows.checkout_box_office,
    flows.hold_then_checkout_box_office,
    flows.naive_map,
    flows.db_floor,
)

# The per-client limit's reservation (sales/client_holds.py), before a hold's session write.
RESERVE = ["findAndModify client_holds"]
# A hold's read of its cart, which takes the seats the cart's releases left counted for its address.
TAKE = "findAndModify carts"

# The access patterns' targets (docs/architecture.md), as (description, check over the command list).
TARGETS = {
    "q1": ("one indexed query on sessions", lambda cmds: cmds.count("find sessions") == 1),
    "q2": ("one read by _id", lambda cmds: cmds.count("find sessions") == 1 and _writes(cmds) == []),
    # the worker that read the version a moment ago answers from it (web/live_versions.py)
    "q3": ("a 304 from the kept version, or one tiny read", lambda cmds: cmds in ([], ["find sessions"])),
    # a hold's and a release's writes are findAndModify (still one command each): their replies
    # answer the click. Every buyer has an address here, so the per-client held-seats limit's
    # document is written too (by _id: reserved before a hold, the cart's entry made to last while
    # it is paid for before checkout's cart write; sales/client_holds.py). A hold in a cart reads
    # it with the write that takes the seats its releases left counted (none here, so it changes
    # nothing and the hold reserves); a release adds its seats to them in its cart write, and
    # writes nothing on the address's document. In the timed C1/C2 loop every hold follows a
    # release: the read takes the seats, and the hold sends 3 commands.
    "c1": (
        "3 writes, the cart read by the write taking its unreturned seats",
        lambda cmds: _writes(cmds) == [TAKE, *RESERVE, "findAndModify sessions", "findAndModify carts"],
    ),
    "c1_new_cart": ("3 writes", lambda cmds: _writes(cmds) == [*RESERVE, "findAndModify sessions", "insert carts"]),
    "c1_first_in_worker": (
        "3 writes",
        lambda cmds: _writes(cmds) == [*RESERVE, "findAndModify sessions", "insert carts"],
    ),
    "c2": ("2 writes", lambda cmds: _writes(cmds) == ["findAndModify sessions", "findAndModify carts"]),
    # checkout starts the payment (was 4 writes when it sold the seats); paying sells them
    "c3": (
        "4 writes",
        lambda cmds: _writes(cmds) == ["update client_holds", "update carts", "insert orders", "update orders"],
    ),
    # a box-office reservation: its per-client entry counted among the address's open reservations
    # to the deadline, the cart to paying, the order; no provider, no payment id to write
    "c3_box_office": (
        "3 writes",
        lambda cmds: _writes(cmds) == ["findAndModify client_holds", "update carts", "insert orders"],
    ),
    "c3_pay": ("7 writes", lambda cmds: _pay_writes(cmds)),
    "c4": ("1 + sessions-in-cart writes", None),
}


def _pay_writes(cmds: list[str]) -> bool:
    """A card payment's writes (booking/tests/sales/test_access_patterns.py): claim, paid, sold, the
    receipt number (taken from the theater's series, then written on the order), cart done,
    settled. The theater's first receipt creates its series first."""
    receipt = [["findAndModify number_series"], ["insert number_series", "findAndModify number_series"]]
    head = ["update orders", "update orders", "update sessions"]
    tail = ["update orders", "update carts", "update orders"]
    return any(_writes(cmds) == head + middle + tail for middle in receipt)


def _writes(cmds: list[str]) -> list[str]:
    return [c for c in cmds if c.split(" ", 1)[0] in {"insert", "update", "delete", "findAndModify"}]


def account(response) -> dict:
    """The command monitor's figures for one request sent with ``ACCOUNT`` to ``stack.accounting_url``."""
    h = response.headers
    if "x-mongo-commands" not in h:
        raise RuntimeError("accounting request answered without X-Mongo-* headers: not the monitored gunicorn?")
    return {
        "status": response.status,
        "commands": int(h.get("x-mongo-commands", 0)),
        "writes": int(h.get("x-mongo-writes", 0)),
        "bytes_out": int(h.get("x-mongo-bytes-out", 0)),
        "bytes_in": int(h.get("x-mongo-bytes-in", 0)),
        "list": [c for c in h.get("x-mongo-command-list", "").split(", ") if c],
        "response_bytes": len(response.body),
        "server_us": response.server_us,
    }


def machine() -> dict:
    info = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_before": os.getloadavg(),
        "gunicorn": " ".join(GUNICORN_ARGS),
    }
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text().splitlines()
        info["cpu"] = next(line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name"))
    except (OSError, StopIteration):
        info["cpu"] = platform.processor()
    try:
        info["commit"] = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
        ).stdout.strip()
    except OSError:
        info["commit"] = ""
    return info


def stats(samples: list, seconds: float) -> dict:
    ok = [s for s in samples if s.ok]
    latencies = [s.seconds * 1000 for s in samples]
    server = [s.server_us / 1000 for s in samples if s.server_us]
    return {
        "n": len(samples),
        "failed": len(samples) - len(ok),
        "p50": percentile(latencies, 50),
        "p95": percentile(latencies, 95),
        "p99": percentile(latencies, 99),
        "server_p50": percentile(server, 50) if server else None,
        "rps": len(samples) / seconds if seconds else 0.0,
        "ok_rps": len(ok) / seconds if seconds else 0.0,  # what the goals count: refusals are fast
        "statuses": sorted({s.status for s in samples}),
    }


def accounting_pass(stack: Stack, ids: dict, params: dict) -> dict:
    """One request of each kind, to the gunicorn with the command monitor: commands and bytes, exactly."""
    out = {}
    base = stack.accounting_url
    c = Client(base, 60_000)
    out["hello"] = account(c.get("/bench/hello", ACCOUNT))
    out["q1"] = account(c.get("/", ACCOUNT))
    page = f"/sessions/{ids['map_session']}/"
    c.get(page)
    out["q2"] = account(c.get(page, ACCOUNT))
    out["naive"] = account(c.get(f"/bench/naive/{ids['map_session']}/", ACCOUNT))
    live = f"/sessions/{ids['map_session']}/map/"
    etag = c.get(live).headers["etag"]
    out["q3"] = account(c.get(live, {**ACCOUNT, "If-None-Match": etag}))

    buyer = Client(base, 60_001)
    session = ids["changed_session"]
    buyer.get(f"/sessions/{session}/")
    pair_a, pair_b = params["pairs"][-1], params["pairs"][-2]  # not used by the timed clients
    # The first hold of a session in a worker also reads the session (its layout and prices are
    # then kept there), as it is in a worker just started; every later one does not. One
    # connection is served by one worker: a first buyer's hold teaches it the session, then a
    # second buyer (new cookies, same connection) starts a new cart as the timed clients do.
    first = buyer.post(f"/sessions/{session}/hold", {"seats": pair_a, **flows.DECLARED}, {**ACCOUNT, **flows.HTMX})
    out["c1_first_in_worker"] = account(first)
    buyer.post(f"/sessions/{session}/release", {"seats": pair_a}, flows.HTMX)
    buyer.cookies.clear()
    buyer.get(f"/sessions/{session}/")
    out["c1_new_cart"] = account(
        buyer.post(f"/sessions/{session}/hold", {"seats": pair_a, **flows.DECLARED}, {**ACCOUNT, **flows.HTMX})
    )
    out["c1"] = account(
        buyer.post(f"/sessions/{session}/hold", {"seats": pair_b, **flows.DECLARED}, {**ACCOUNT, **flows.HTMX})
    )
    c.get(f"/sessions/{session}/")
    c.get(f"/sessions/{session}/map/")
    out["c2"] = account(buyer.post(f"/sessions/{session}/release", {"seats": pair_b}, {**ACCOUNT, **flows.HTMX}))
    # without the old ETag, as the timed row asks (bench/flows.py refresh_changed)
    out["q3_changed"] = account(c.get(f"/sessions/{session}/map/", ACCOUNT))
    bought = buyer.post("/checkout/", {"name": "Ada", "email": "ada@example.org"}, ACCOUNT)
    out["c3"] = account(bought)
    means, _ = flows.card_token(params["stripe_url"])
    pay_path = bought.headers["location"].rstrip("/") + "/pay"
    out["c3_pay"] = account(buyer.post(pay_path, {"payment_method": means}, ACCOUNT))
    # a box-office reservation, in a new cart (seats of the last client's plan: no timed run uses them)
    reserver = Client(base, 60_002)
    session, seats = params["box_office_plan"][-1][-1]  # the spare plan: no timed client has it
    reserver.get(f"/sessions/{session}/")
    reserver.post(f"/sessions/{session}/hold", {"seats": seats, **flows.DECLARED}, flows.HTMX)
    form = {"name": "Ada", "email": "ada@example.org", "method": "box_office"}
    out["c3_box_office"] = account(reserver.post("/checkout/", form, ACCOUNT))
    for name, result in out.items():
        target = TARGETS.get(name)
        if target and target[1]:
            result["target"] = target[0]
            result["meets_target"] = bool(target[1](result["list"]))
    for client in (c, buyer, reserver):
        client.close()
    return out


def floor_accounting(stack: Stack, params: dict) -> dict:
    import pymongo

    from booking.core.command_monitor import RequestCommandMonitor

    monitor = RequestCommandMonitor()
    client = pymongo.MongoClient(stack.mongodb_uri, event_listeners=[monitor])
    try:
        client.admin.command("ping")  # connect first: the handshake is not the update
        monitor.begin()
        coll = client[stack.db_name]["sessions"]
        from bson import ObjectId

        sid = ObjectId(params["floor_session"])
        (r0, c0), (r1, c1) = (tuple(int(x) for x in k.split(":")) for k in params["pairs"][0])
        free = {f"seats.{r0}.{c0}": 0, f"seats.{r1}.{c1}": 0}
        cart = ObjectId()
        coll.update_one(
            {"_id": sid, "status": SessionStatus.ON_SALE, **free, "reservations._id": {"$ne": cart}},
            {
                "$set": dict.fromkeys(free, 1),
                "$inc": {"seatsAvailable": -2, "version": 1},
                "$push": {"reservations": {"_id": cart, "seats": params["pairs"][0], "total": 0, "v": "x"}},
            },
        )
        tally = monitor.end()
        coll.update_one(
            {"_id": sid},
            {"$set": free, "$inc": {"seatsAvailable": 2, "version": 1}, "$pull": {"reservations": {"_id": cart}}},
        )
    finally:
        client.close()
    return {
        "commands": len(tally.commands),
        "writes": tally.writes,
        "bytes_out": tally.bytes_out,
        "bytes_in": tally.bytes_in,
        "list": tally.commands,
        "response_bytes": 0,
    }


def render_cpu(session_id, repeats: int) -> dict:
    """CPU time of the map render alone, in this process: naive template loop vs the fast path."""
    from django.template.loader import render_to_string
    from django.test import RequestFactory

    from booking.sales import selectors
    from booking.web import seatmap_html

    from .views import naive_context

    session = selectors.get_session(session_id)
    request = RequestFactory().get("/")  # the naive page has a {% csrf_token %}

    def cpu_ms(fn) -> float:
        best = []
        for _ in range(repeats):
            gc.disable()
            t = time.process_time()
            fn()
            best.append((time.process_time() - t) * 1000)
            gc.enable()
        return percentile(best, 50)

    render_to_string("bench/naive_map.html", naive_context(session), request=request)  # load the template once
    naive = cpu_ms(lambda: render_to_string("bench/naive_map.html", naive_context(session), request=request))
    cold = cpu_ms(lambda: seatmap_html.build_seat_map(session).for_viewer())
    seatmap_html.seat_map_html(session)
    warm = cpu_ms(lambda: seatmap_html.seat_map_html(session).for_viewer())
    return {"naive_ms": naive, "fast_cold_ms": cold, "fast_cached_ms": warm}


def expiry_sweep(count: int) -> dict:
    from booking.sales.cart_expiry import expire_stale_carts
    from booking.tests.commands import counting_commands
    from booking.upkeep.invariants import check_invariants

    data.stale_carts(count)
    started = time.perf_counter()
    with counting_commands() as counter:
        report = expire_stale_carts()
    seconds = time.perf_counter() - started
    return {
        "carts": report.carts_expired,
        "seconds": seconds,
        "per_cart_ms": seconds * 1000 / max(report.carts_expired, 1),
        "commands_per_cart": len(counter.commands) / max(report.carts_expired, 1),
        "writes_per_cart": len(counter.writes) / max(report.carts_expired, 1),
        "breaches": check_invariants(),
    }


def run_scenarios(size: Size) -> dict:
    from booking.venues.layouts import parse_grid
    from booking.venues.theaters import create_theater

    out = {}
    hall = create_theater("Scenario Hall", parse_grid(scenario.DISJOINT_GRID, [{"code": "s", "name": "Stalls"}]))
    per_session = 80
    sessions = [
        data.performance(hall, "Scenario (disjoint)", 40 + i * 0.1) for i in range(-(-size.users // per_session))
    ]
    plans = scenario.disjoint_plans(sessions, size.users)
    out["disjoint"] = scenario.run("disjoint", plans)
    crowded = data.performance(data.grand_hall(), "Scenario (overlap)", 45)
    out["overlap"] = scenario.run("overlap", [crowded["_id"]] * size.users)
    return {name: summarize_scenario(r) for name, r in out.items()}


def summarize_scenario(result) -> dict:
    flows_ok = [o for o in result.outcomes if o.result == "ok"]
    failed = [o for o in result.outcomes if o.result == "failed"]
    conflicts = [o for o in result.outcomes if o.result == "conflict"]

    def pct(values):
        ms = [v * 1000 for v in values]
        return {"p50": percentile(ms, 50), "p95": percentile(ms, 95), "p99": percentile(ms, 99)}

    return {
        "users": len(result.outcomes),
        "ok": len(flows_ok),
        "conflicts": len(conflicts),
        "failed": len(failed),
        "failures": sorted({o.error for o in failed})[:5],
        "retries": sum(o.attempts - 1 for o in result.outcomes),
        "seconds": result.seconds,
        "flow": pct([o.flow for o in flows_ok]),
        "hold": pct([o.hold for o in flows_ok]),
        "checkout": pct([o.checkout for o in flows_ok]),
        "breaches": result.breaches[:10],
    }


def timed(stack, flow, clients, size, params) -> dict:
    """One timed run against the gunicorn without the command monitor, with the CPU it cost.

    A flow that times two kinds of request (hold and release, hold and checkout) is one window of
    CPU: both rows get the same figures, per request of either kind.
    """
    meter = stack.cpu_meter()
    result = load.run(flow, stack.base_url, clients, size.seconds, params, warmup=size.warmup, window=meter)
    if result.errors:
        raise RuntimeError(f"{flow.__name__} at {clients} clients: {result.errors[:3]}")
    if result.ran_out and size.name == "full":
        # a client that stopped early leaves the window short of work: its rate would be a ceiling
        # set by the plan, not a measurement (the CI-sized run's windows are not timed goals)
        raise RuntimeError(
            f"{flow.__name__} at {clients} clients: {result.ran_out} clients ran out of seats before the window "
            "ended; give the flow more seats (bench/run.py's plans)"
        )
    cpu = meter.per_request(sum(len(samples) for samples in result.samples.values()))
    return {name: {**stats(samples, result.seconds), "cpu": cpu} for name, samples in result.samples.items()}


def run(size: Size, log=print, only: tuple[str, ...] = ()) -> dict:
    """The whole benchmark; with ``only`` (flow names of TABLE_FLOWS) the accounting pass and those
    rows of the table, nothing else (hello world is always timed too: the floor they are read
    against)."""
    import django

    django.setup()
    from booking.core import mongo
    from booking.payments.settings import set_box_office
    from booking.web import seatmap_html

    results: dict = {"size": size.name, "machine": machine(), "started": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    with Stack() as stack:
        stack.use_in_this_process()
        mongo.ensure_indexes()
        results["mongodb"] = (
            "the MongoDB at MONGODB_URI" if stack.real_mongodb else "devmongo (the stand-in, started by the benchmark)"
        )
        log(f"stack up: {stack.base_url}, MongoDB {stack.mongodb_uri} ({results['mongodb']})")
        hall = data.grand_hall()
        map_session = data.performance(hall, "Hamlet", 1)
        hold_session = data.performance(hall, "The Magic Flute", 2)
        changed_session = data.performance(hall, "Waiting for Godot", 3)
        floor_session = data.performance(hall, "Floor", 4)
        checkout_sessions = [data.performance(hall, "Checkout", 5 + i) for i in range(2 if size.name == "full" else 1)]
        # 10,800 seats for the goal row (buyers with seats held check out: 2 seats each, up to
        # flows.BUYERS_PER_CLIENT per client, 800/s for 5 s) and 3,600 for the hold-then-checkout
        # loop beside it
        full = size.name == "full"
        box_office_sessions = [data.performance(hall, "Box office", 7 + i * 0.05) for i in range(12 if full else 1)]
        loop_sessions = [data.performance(hall, "Box office", 8 + i * 0.1) for i in range(4 if full else 1)]
        for session in box_office_sessions + loop_sessions:
            set_box_office(session["_id"], enabled=True, deadline_minutes=30)
        for i in range(6):
            data.performance(hall, f"Repertoire {i}", 10 + i)
        # The checkout rows run at the table's clients only (never in the sweep): every seat of their
        # sessions goes to those clients, plus one plan more for the accounting pass. Split over the
        # sweep's 50 clients, the box-office row's 10 had 750 groups: 150/s in 5 s and no more, the
        # run of 2026-11-24 measured exactly that ceiling (3.75x the baseline).
        plan_clients = size.table_clients + 1
        params = {
            "map_session": str(map_session["_id"]),
            "hold_session": str(hold_session["_id"]),
            "changed_session": str(changed_session["_id"]),
            "floor_session": str(floor_session["_id"]),
            "pairs": data.edge_pairs(hold_session),
            "checkout_plan": data.checkout_plan(checkout_sessions, plan_clients),
            "box_office_plan": data.checkout_plan(box_office_sessions, plan_clients),
            "box_office_buyers": flows.BUYERS_PER_CLIENT if full else 20,
            "box_office_loop_plan": data.checkout_plan(loop_sessions, plan_clients),
            "mongodb_uri": stack.mongodb_uri,
            "db_name": stack.db_name,
            "stripe_url": stack.stripe_url,
        }
        results["seats_in_map"] = map_session["seatsTotal"]

        log(f"accounting pass (command monitoring on, {stack.accounting_url})")
        results["accounting"] = accounting_pass(stack, params, params)
        results["accounting"]["db_floor"] = floor_accounting(stack, params)
        results["accounting"]["c4"] = None  # filled in by the sweep

        log(f"timed runs at {size.table_clients} clients, {size.seconds}s each")
        table = {}
        for flow in TABLE_FLOWS:
            if only and flow.__name__ not in {"hello", *only}:
                continue
            measured = timed(stack, flow, size.table_clients, size, params)
            table.update(measured)
            log(
                f"  {flow.__name__}: "
                + ", ".join(f"{k} p50 {v['p50']:.2f} ms, {v['rps']:.0f}/s" for k, v in measured.items())
            )
        results["table"] = table
        results["table_clients"] = size.table_clients
        if only:
            results["only"] = list(only)
            results["machine"]["load_after"] = os.getloadavg()
            results["goals"] = goals(results)
            return results
        # server time at one client: no time spent waiting for the GIL behind other requests
        results["single"] = {}
        for flow in (flows.seat_map_page, flows.naive_map):
            results["single"].update(timed(stack, flow, 1, size, params))

        log(f"concurrency sweep {size.sweep}")
        sweep: dict = {}
        for clients in size.sweep:
            for flow in (flows.hello, flows.seat_map_page, flows.refresh_unchanged, flows.hold_release):
                for name, st in timed(stack, flow, clients, size, params).items():
                    sweep.setdefault(name, {})[clients] = st
            log(f"  {clients} clients: " + ", ".join(f"{k} {v[clients]['rps']:.0f}/s" for k, v in sweep.items()))
        results["sweep"] = sweep

        log("render CPU (in process)")
        results["render"] = render_cpu(map_session["_id"], 20 if size.name == "full" else 3)
        seatmap_html.clear_cache()

        log(f"expiry sweep of {size.stale_carts} stale carts")
        results["c4"] = expiry_sweep(size.stale_carts)

        log(f"seed scenario, {size.users} users")
        results["scenario"] = run_scenarios(size)

        log("subscription sale of 8 performances vs one single-seat hold")
        results["subscription"] = subscription.measure(hall, 200 if size.name == "full" else 20)

        log("stadium")
        # what's on lists the table's performances plus the stadium, not the sweep's, the
        # scenario's and the box-office checkout's (as before that row existed): by name, through a
        # hint (an index scan of the few sessions: notablescan lets it through)
        names = ["Expiry sweep", "Scenario (disjoint)", "Scenario (overlap)", "Box office"]
        mongo.sessions().delete_many({"name": {"$in": names}}, hint=[("_id", 1)])
        from .stadium import measure_stadium

        results["stadium"] = measure_stadium(
            stack, size.stadium_seats, max(size.seconds, 2.0 if size.name == "full" else 0.3), size.warmup
        )
        results["machine"]["load_after"] = os.getloadavg()
    results["goals"] = goals(results)
    return results


def run_scenario_only(size: Size, log=print) -> dict:
    """The seed scenario alone: devmongo, Redis and localstripe, no web server, no other row."""
    import django

    django.setup()
    from booking.core import mongo

    results: dict = {"size": size.name, "machine": machine(), "started": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    with Stack(web=False) as stack:
        stack.use_in_this_process()
        mongo.ensure_indexes()
        results["mongodb"] = "the MongoDB at MONGODB_URI" if stack.real_mongodb else "devmongo (the stand-in)"
        log(f"seed scenario, {size.users} users, MongoDB {stack.mongodb_uri}")
        results["scenario"] = run_scenarios(size)
    results["machine"]["load_after"] = os.getloadavg()
    return results


def goals(r: dict) -> list[dict]:
    """Every goal of the issue as a measured ratio, met or not."""
    t = r["table"]
    out = []

    def goal(name, value, limit, met, detail):
        out.append({"goal": name, "value": value, "limit": limit, "met": bool(met), "detail": detail})

    out += checkout_and_whats_on_goals(r)
    if r.get("only"):
        return out
    s = r["sweep"]
    one, most = min(next(iter(s.values()))), max(next(iter(s.values())))

    naive, page = r["single"]["naive"]["server_p50"], r["single"]["q2"]["server_p50"]
    busy_naive, busy_page = t["naive"]["server_p50"], t["q2"]["server_p50"]
    goal(
        "seat map page: server time >= 20x lower than the naive template loop",
        naive / page,
        20,
        naive / page >= 20,
        f"server p50 at 1 client: naive {naive:.2f} ms vs page {page:.2f} ms (at {r['table_clients']} clients: "
        f"{busy_naive:.1f} vs {busy_page:.1f} ms, {busy_naive / busy_page:.1f}x); render alone: naive "
        f"{r['render']['naive_ms']:.2f} ms CPU vs cached {r['render']['fast_cached_ms']:.3f} ms "
        f"(cold build {r['render']['fast_cold_ms']:.2f} ms)",
    )
    if "subscription" in r:
        sub = r["subscription"]
        goal(
            f"selling a subscription of {sub['performances']} performances: < 10x one single-seat hold",
            sub["ratio"],
            10,
            sub["ratio"] < 10,
            f"p50 in process over {sub['samples']} sales: subscription {sub['subscription_p50_ms']:.2f} ms vs "
            f"single-seat hold {sub['single_p50_ms']:.2f} ms",
        )
    q3, hello = s["q3"][one]["p50"], s["hello"][one]["p50"]
    goal(
        "unchanged live refresh: 304 in < 2x hello-world time",
        q3 / hello,
        2,
        q3 / hello < 2,
        f"p50 at 1 client: 304 {q3:.2f} ms vs hello {hello:.2f} ms",
    )
    hold_rps = s["c1"][most]["rps"] + s["c2"][most]["rps"]
    hello_rps = s["hello"][most]["rps"]
    goal(
        f"hold seats: throughput at {most} clients >= 50% of hello-world's",
        hold_rps / hello_rps,
        0.5,
        hold_rps / hello_rps >= 0.5,
        f"{hold_rps:.0f} seat requests/s (holds {s['c1'][most]['rps']:.0f}/s + releases "
        f"{s['c2'][most]['rps']:.0f}/s) vs hello {hello_rps:.0f}/s",
    )
    hold_p99, hello_p99 = s["c1"][most]["p99"], s["hello"][most]["p99"]
    goal(
        f"hold seats: p99 at {most} clients < 5x hello-world's p99",
        hold_p99 / hello_p99,
        5,
        hold_p99 / hello_p99 < 5,
        f"p99 hold {hold_p99:.1f} ms vs hello {hello_p99:.1f} ms",
    )
    for name, sc in r["scenario"].items():
        goal(
            f"seed scenario ({name}): no failed flows but honest conflicts; invariants hold",
            sc["failed"],
            0,
            sc["failed"] == 0 and not sc["breaches"],
            f"{sc['ok']} bought, {sc['conflicts']} honest conflicts, {sc['failed']} failed, "
            f"{len(sc['breaches'])} invariant breaches",
        )
    st = r.get("stadium") or {}
    if st:
        goal(
            "stadium: every session document < 2 MB",
            st["largest_doc_bytes"] / 2**20,
            2,
            st["largest_doc_bytes"] < 2 * 2**20,
            f"{st['documents']} section documents, largest {st['largest_doc_bytes'] / 1024:.0f} KB",
        )
        goal(
            "stadium: every page < 200 KB of HTML",
            st["largest_page_bytes"] / 1024,
            200,
            st["largest_page_bytes"] < 200 * 1024,
            ", ".join(f"{k} {v['bytes'] / 1024:.0f} KB" for k, v in st["pages"].items()),
        )
        worst = max(v["p50"] for v in st["pages"].values())
        goal(
            "stadium: every page renders in < 10x hello-world time",
            worst / st["hello_p50"],
            10,
            worst / st["hello_p50"] < 10,
            ", ".join(f"{k} {v['p50']:.1f} ms" for k, v in st["pages"].items())
            + f" vs hello {st['hello_p50']:.2f} ms (p50, 1 client)",
        )
    return out


# The figures for our own checkout and the what's-on page, at the table's clients: the
# issue's baseline was 40 checkouts/s (p99 535 ms) and 397 what's-on pages/s.
CHECKOUT_BASELINE_PER_S = 40.0
CHECKOUT_GOAL_P99_MS = 100.0
WHATS_ON_GOAL_PER_S = 1000.0


def checkout_and_whats_on_goals(r: dict) -> list[dict]:
    t, clients = r["table"], r["table_clients"]
    hello = t.get("hello")
    out = []
    bo = t.get("c3_box_office")
    if bo:
        # orders that were made: a refused request answers fast and would count as throughput
        # (the run of 2026-11-24 evening: 603 of 750 refused, its holds over the per-address rate)
        done_per_s = bo.get("ok_rps", bo["rps"])
        ratio = done_per_s / CHECKOUT_BASELINE_PER_S
        loop = t.get("c3_box_office_loop")
        loop_detail = (
            f"; with each hold in the same loop (C1 then C3): {loop.get('ok_rps', loop['rps']):.0f} orders/s, "
            f"p99 {loop['p99']:.1f} ms"
            if loop
            else ""
        )
        out.append(
            {
                "goal": f"checkout to a confirmed order (box office) at {clients} clients: >= 5x the issue's "
                f"{CHECKOUT_BASELINE_PER_S:.0f}/s, p99 < {CHECKOUT_GOAL_P99_MS:.0f} ms",
                "value": ratio,
                "limit": 5,
                "met": ratio >= 5 and bo["p99"] < CHECKOUT_GOAL_P99_MS and not bo["failed"],
                "detail": f"{done_per_s:.0f} confirmed orders/s by buyers with seats held ({bo['failed']} failed), "
                f"p50 {bo['p50']:.1f} ms, p99 {bo['p99']:.1f} ms"
                + loop_detail
                + (f"; hello world {hello['rps']:.0f} req/s" if hello else ""),
            }
        )
    q1 = t.get("q1")
    if q1:
        out.append(
            {
                "goal": f"what's on: >= {WHATS_ON_GOAL_PER_S:,.0f} req/s at {clients} clients",
                "value": q1["rps"],
                "limit": int(WHATS_ON_GOAL_PER_S),
                "met": q1["rps"] >= WHATS_ON_GOAL_PER_S,
                "detail": f"p50 {q1['p50']:.2f} ms, p99 {q1['p99']:.1f} ms"
                + (f"; hello world {hello['rps']:.0f} req/s ({q1['rps'] / hello['rps']:.2f} of it)" if hello else ""),
            }
        )
    return out
