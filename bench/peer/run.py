"""The peer run: our stack and pretix's side by side on this machine, the same buyers against both,
one system after the other in one run. ``python -m bench.peer`` (``make bench-peer``)."""

import os
import time
from datetime import timedelta
from pathlib import Path

from .. import load
from ..cpu import machine_busy_seconds, process_cpu_seconds
from ..load import percentile
from ..stack import GUNICORN_ARGS, Stack
from . import flows, halls
from . import pretix_env as pe
from .systems import Ours, Pretix

CHECKOUT_EVENTS = 3  # 3 x 830 seats for the checkout row: neither system runs out within its window


class Meter:
    """CPU by group of processes over the measured window; a group is a callable giving its pids
    now (PostgreSQL starts a backend per new connection: a pid seen only at the end is counted whole)."""

    def __init__(self, groups: dict):
        self.groups = groups
        self.cpu: dict = {}

    def _snap(self):
        return {name: {pid: process_cpu_seconds(pid) for pid in fn()} for name, fn in self.groups.items()}

    def __enter__(self):
        self.t0, self.m0, self.s0 = time.monotonic(), machine_busy_seconds(), self._snap()
        return self

    def __exit__(self, *exc):
        self.seconds = time.monotonic() - self.t0
        self.machine = machine_busy_seconds() - self.m0
        s1 = self._snap()
        for name, pids in s1.items():
            before = self.s0[name]
            self.cpu[name] = sum((cpu or 0) - (before.get(pid) or 0) for pid, cpu in pids.items() if cpu is not None)

    def per(self, count: int) -> dict:
        out = {f"{name}_ms": cpu * 1000 / count if count else None for name, cpu in self.cpu.items()}
        out["cores_busy"] = self.machine / self.seconds if self.seconds else None
        return out


def stats(samples: list, seconds: float) -> dict:
    ms = [s.seconds * 1000 for s in samples]
    return {
        "n": len(samples),
        "errors": sum(1 for s in samples if not s.ok),
        "p50": percentile(ms, 50),
        "p99": percentile(ms, 99),
        "rps": len(samples) / seconds if seconds else 0.0,
    }


def pg_backend_pids() -> list[int]:
    """The PostgreSQL backends serving pretix's database (their title names it)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if cmd.startswith(b"postgres:") and pe.DB_NAME.encode() in cmd:
                pids.append(int(entry.name))
    return pids


def timed(name, flow, base_url, clients, seconds, params, groups, count_label, log) -> dict:
    meter = Meter(groups)
    result = load.run(flow, base_url, clients, seconds, params, warmup=2.0, window=meter)
    if result.errors:
        log(f"    client errors: {result.errors[:3]}")
    rows = {label: stats(samples, result.seconds) for label, samples in result.samples.items()}
    count = len(result.samples.get(count_label, []))
    for label in rows:
        rows[label]["cpu_per_" + count_label.replace(" ", "_")] = meter.per(count)
    rows["_meta"] = {"clients": clients, "seconds": result.seconds, "client_errors": result.errors[:5]}
    log(
        f"  {name} @{clients}: "
        + ", ".join(
            f"{k} p50 {v['p50']:.1f} p99 {v['p99']:.1f} ms {v['rps']:.0f}/s err {v['errors']}"
            for k, v in rows.items()
            if not k.startswith("_")
        )
    )
    return rows


def rush(system, base_url, params, groups, buyers, log) -> dict:
    import multiprocessing

    orders = multiprocessing.get_context("fork").Value("i", 0)  # inherited by the client processes
    result = load.run(
        flows.rush_buyer,
        base_url,
        buyers,
        0.0,
        {**params, "system": system, "rush_orders": orders},
        max_steps=1,
        warmup=2.0,
        window=None,
    )
    s = result.samples
    began = min(x.seconds for x in s.get("_began_at", [])) if s.get("_began_at") else 0.0
    bought = sorted(x.seconds for x in s.get("_bought_at", []))
    ended = max(x.seconds for x in s.get("_ended_at", [])) if s.get("_ended_at") else began
    out = {
        "buyers": buyers,
        "orders": len(bought),
        "seats_sold": 2 * len(bought),
        "sold_out_seconds": (bought[-1] - began) if bought else None,
        "all_done_seconds": ended - began,
        "client_errors": result.errors[:5],
        "failed_checkouts": len(s.get("rush checkout failed", [])),
    }
    for label in ("rush seat map", "rush hold", "rush checkout request"):
        if s.get(label):
            out[label] = stats(s[label], max(ended - began, 1e-9))
    log(
        f"  rush: {out['orders']} orders in {out['sold_out_seconds']} s, all {buyers} buyers done in "
        f"{out['all_done_seconds']:.1f} s, errors {result.errors[:2]}"
    )
    return out


def rush_with_cpu(system, base_url, params, groups, buyers, log) -> dict:
    meter = Meter(groups)
    with meter:
        out = rush(system, base_url, params, groups, buyers, log)
    holds = out.get("rush hold", {}).get("n", 0) + out.get("rush checkout request", {}).get("n", 0)
    out["cpu_per_request"] = meter.per(holds + out.get("rush seat map", {}).get("n", 0))
    out["cpu_total_s"] = dict(meter.cpu)
    return out


def measure(system, base_url, params, groups, seconds, log) -> dict:
    p = {**params, "system": system}
    out = {}
    out["whats_on"] = timed("what's on", flows.whats_on, base_url, 10, seconds, p, groups, "whats_on", log)
    out["seat_map"] = timed("seat map", flows.seat_map, base_url, 10, seconds, p, groups, "seat_map", log)
    for clients in (10, 50):
        out[f"hold_release_{clients}"] = timed(
            "hold/release", flows.hold_release, base_url, clients, seconds, p, groups, "hold", log
        )
    out["checkout"] = timed("checkout", flows.checkout, base_url, 10, seconds, p, groups, "checkout", log)
    return out


def warm(system, base_url, params, log) -> None:
    """Every kind of request a few times, unmeasured, with a long timeout: a pretix worker's first
    requests take tens of seconds on this machine (it imports and compiles on first use)."""
    started = time.monotonic()
    for i in range(8):
        c = load.Client(base_url, 50_000 + i)
        c.conn.timeout = 300
        system.whats_on(c)
        system.seat_map(c, "grand")
        pair = params["warm_pairs"][i]
        system.hold(c, "warm", pair)
        system.release(c, "warm", pair)
        system.hold(c, "warm", pair)
        system.checkout(c, 50_000 + i, "warm")
        c.close()
    log(f"  {system.name} warmed up in {time.monotonic() - started:.0f}s")


def checkout_plan(slots_by_event: dict, clients: int) -> list[list]:
    plan: list[list] = [[] for _ in range(clients)]
    i = 0
    for event, slots in slots_by_event.items():
        for pair in slots:
            plan[i % clients].append((event, pair))
            i += 1
    return plan


def setup_ours(stack: Stack, log) -> dict:
    from booking.core import clock
    from booking.payments.settings import set_box_office
    from booking.sales.sessions import create_session
    from booking.venues.theaters import create_theater

    stack.use_in_this_process()
    from booking.core import mongo

    mongo.ensure_indexes()
    grand = create_theater("Grand Hall", halls.grand_layout())
    rush_hall = create_theater("Rush Hall", halls.rush_layout())
    sessions = {}

    def make(slug, theater, days, name):
        start = clock.now() + timedelta(days=days)
        s = create_session(
            theater["_id"],
            published=True,
            name=name,
            description="Peer run",
            start=start,
            end=start + timedelta(hours=2),
            prices=halls.PRICES if theater is grand else {"s": halls.PRICES["s"]},
        )
        set_box_office(s["_id"], enabled=True, deadline_minutes=30)
        sessions[slug] = str(s["_id"])

    for slug, theater, days in _events(grand, rush_hall):
        make(slug, theater, days, slug.capitalize())
    return {"sessions": sessions}


def _events(grand, rush_hall):
    yield "grand", grand, 7
    yield "warm", grand, 7.5
    for i in range(CHECKOUT_EVENTS):
        yield f"co{i}", grand, 8 + i
    yield "rush", rush_hall, 12


def pretix_specs() -> dict:
    grand, rush_layout = halls.grand_layout(), halls.rush_layout()
    return {
        "events": [
            halls.pretix_spec(slug, slug.capitalize(), rush_layout if slug == "rush" else grand, days)
            for slug, _t, days in _events("g", "r")
        ]
    }


def ours_double_sold(session_id: str) -> dict:
    """Seats in more than one order that keeps them (reserved or paid), from the orders collection."""
    from bson import ObjectId

    from booking.core import mongo
    from booking.upkeep.invariants import check_invariants

    sid = ObjectId(session_id)
    counts: dict = {}
    orders = mongo.orders().find({"lines.sessionId": sid}, {"lines": 1, "state": 1}, hint=[("_id", 1)])
    kept = 0
    for order in orders:
        if order["state"] in ("failed", "canceled", "expired"):
            continue
        kept += 1
        for line in order["lines"]:
            if line["sessionId"] == sid:
                counts[line["key"]] = counts.get(line["key"], 0) + 1
    return {
        "orders": kept,
        "seats_in_orders": len(counts),
        "sold_twice": sum(1 for n in counts.values() if n > 1),
        "invariant_breaches": check_invariants()[:5],
    }


def pretix_double_sold(cfg) -> dict:
    rows = pe.query(
        cfg,
        "SELECT s.seat_guid, count(*) FROM pretixbase_orderposition op "
        "JOIN pretixbase_order o ON o.id = op.order_id JOIN pretixbase_seat s ON s.id = op.seat_id "
        "JOIN pretixbase_event e ON e.id = o.event_id "
        "WHERE e.slug = 'rush' AND NOT op.canceled AND o.status IN ('n', 'p') GROUP BY s.seat_guid",
    )
    orders = pe.query(
        cfg,
        "SELECT count(*) FROM pretixbase_order o JOIN pretixbase_event e ON e.id = o.event_id "
        "WHERE e.slug = 'rush' AND o.status IN ('n', 'p')",
    )
    return {
        "orders": int(orders[0][0]),
        "seats_in_orders": len(rows),
        "sold_twice": sum(1 for _guid, n in rows if int(n) > 1),
    }


def run(seconds: float = 8.0, buyers: int = 200, log=print) -> dict:
    results: dict = {
        "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "load_before": os.getloadavg(),
        "gunicorn": " ".join(GUNICORN_ARGS),
        "seconds": seconds,
    }
    grand = halls.grand_layout()
    pairs = halls.edge_pairs(grand)
    slots = halls.pair_slots(grand)
    common = {
        "pairs": pairs,
        "warm_pairs": slots[:8],
        "checkout_plan": checkout_plan({f"co{i}": slots for i in range(CHECKOUT_EVENTS)}, 10),
        "rush_slots": halls.pair_slots(halls.rush_layout()),
    }
    pe.ensure_venv(log)
    pe.ensure_postgres(log)
    workdir = Path(__import__("tempfile").mkdtemp(prefix="bench-peer-"))
    peer = pe.PretixStack(workdir)
    try:
        log("starting pretix (PostgreSQL database from its template, Redis, mail sink, gunicorn)")
        peer.start_services()
        pe.create_database(peer.cfg, log)
        made = pe.seed(peer.cfg, pretix_specs())
        peer.start_web()
        with Stack() as stack:
            log("our stack is up; seeding the same halls")
            ours_params = {**common, **setup_ours(stack, log)}
            pretix_params = {**common, "organizer": made["organizer"], "events": made["events"]}
            ours, pretix = Ours(ours_params), Pretix(pretix_params)
            warm(ours, stack.base_url, ours_params, log)
            warm(pretix, peer.base_url, pretix_params, log)
            ours_groups = {
                "web": lambda: __import__("bench.cpu", fromlist=["children"]).children(
                    stack._proc("gunicorn-timed").pid
                ),
                "db": lambda: stack._pids("devmongo") or [],
                "redis": lambda: stack._pids("redis") or [],
            }
            pretix_groups = {"web": peer.web_pids, "db": pg_backend_pids, "redis": peer.redis_pids}
            results["load_during"] = []
            for system, base, params, groups in (
                (ours, stack.base_url, ours_params, ours_groups),
                (pretix, peer.base_url, pretix_params, pretix_groups),
            ):
                log(f"{system.name}: timed rows, {seconds}s each (load {os.getloadavg()[0]:.1f})")
                results["load_during"].append((system.name, os.getloadavg()))
                results[system.name] = measure(system, base, params, groups, seconds, log)
                results[system.name]["rush"] = rush_with_cpu(system, base, params, groups, buyers, log)
            results["ours"]["rush"]["check"] = ours_double_sold(ours_params["sessions"]["rush"])
            results["pretix"]["rush"]["check"] = pretix_double_sold(peer.cfg)
            log(f"double-sold: ours {results['ours']['rush']['check']}, pretix {results['pretix']['rush']['check']}")
    finally:
        peer.close()
    results["load_after"] = os.getloadavg()
    return results
