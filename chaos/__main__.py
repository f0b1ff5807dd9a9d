"""``python -m chaos``: run the chaos harness and print its summary. Exit status 0 means pass.

python -m chaos --size ci          # a few minutes at most; CI runs this
python -m chaos --size full        # >= 500 buyers, several minutes
python -m chaos --size ci --control  # weakened hold filter: passes only if breaches are found
"""

import argparse
import asyncio
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from booking.core.domain import CartState

SIZES = {
    # buyers, seconds of arrivals, hold seconds, hall rows, gunicorn workers x threads, concurrency
    "ci": {"buyers": 150, "duration": 60, "hold": 12, "rows": 8, "workers": 2, "threads": 4, "concurrency": 60},
    "full": {"buyers": 600, "duration": 300, "hold": 25, "rows": 16, "workers": 3, "threads": 4, "concurrency": 150},
}
ROW_LABELS = "ABCDEFGHJKLMNOPQRSTUVWXYZ"
CATEGORIES = [{"code": "p", "name": "Premium"}, {"code": "s", "name": "Stalls"}]


def hall_grid(rows: int) -> str:
    """4 side seats, an aisle, 14 middle seats, an aisle, 4 side seats: 22 seats a row."""
    lines = []
    for i in range(rows):
        middle = "p" if rows // 4 <= i < rows - rows // 4 else "s"
        lines.append(f"{ROW_LABELS[i]}: ssss.{middle * 14}.ssss")
    return "\n".join(lines)


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m chaos", description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="ci")
    parser.add_argument("--buyers", type=int)
    parser.add_argument("--duration", type=float, help="seconds over which buyers arrive")
    parser.add_argument("--hold", type=int, help="hold seconds (short, so expiry races checkout)")
    parser.add_argument("--rows", type=int, help="rows of 22 seats in the hall")
    parser.add_argument("--workers", type=int, help="gunicorn workers")
    parser.add_argument("--threads", type=int, help="threads per gunicorn worker")
    parser.add_argument("--concurrency", type=int, help="buyers active at once after the rush")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-faults", action="store_true", help="run without injecting faults")
    parser.add_argument("--no-mongo-fault", action="store_true", help="do not stop MongoDB during the run")
    parser.add_argument("--control", action="store_true", help="weaken the hold filter; expect breaches")
    parser.add_argument("--keep", action="store_true", help="keep the run directory (logs, data)")
    args = parser.parse_args(argv)
    for key, value in SIZES[args.size].items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


def settings_env(args, db_name: str) -> dict:
    return {
        "DEBUG": "True",  # 500s are logged with their traceback (and counted)
        "MONGODB_DB": db_name,
        "MONGODB_TIMEOUT_MS": "2000",
        "LOG_LEVEL": "WARNING",
        "BOOKING_HOLD_SECONDS": str(args.hold),
        "BOOKING_HOLD_CAP_SECONDS": str(args.hold * 3),
        "BOOKING_EXPIRE_EVERY_SECONDS": "2",
        "BOOKING_RECONCILE_EVERY_SECONDS": "15",
        "BOOKING_RECONCILE_GRACE_SECONDS": "5",
        "BOOKING_CHECKOUT_STUCK_SECONDS": "5",
        "BOOKING_TRUSTED_PROXIES": "1",  # buyers send their own address in X-Forwarded-For
        "BOOKING_HOLD_RATE": "20/m",
        "BOOKING_MAX_HELD_SEATS_PER_CLIENT": "12",
        "EMAIL_URL": "consolemail://",
        # payments: a short window (late payers pay after their hold ended: seats bought if still
        # free, else refunded), reconcile asks Stripe soon after it, open payments canceled soon
        "BOOKING_PAYMENT_WINDOW_SECONDS": str(args.hold),
        "BOOKING_PAYMENT_CAP_SECONDS": str(args.hold * 4),
        "BOOKING_PAYMENT_CHECK_GRACE_SECONDS": "2",
        "BOOKING_PAYMENT_LATE_SECONDS": str(args.hold * 3),
    }


def seed_hall(rows: int):
    from datetime import timedelta

    from booking.core import clock
    from booking.sales.sessions import create_session
    from booking.venues.layouts import parse_grid
    from booking.venues.theaters import create_theater

    from .buyers import Hall

    theater = create_theater("Chaos Hall", parse_grid(hall_grid(rows), CATEGORIES))
    start = clock.now() + timedelta(days=2)
    session = create_session(
        theater["_id"],
        published=True,
        name="The Rush",
        description="Everybody wants the middle seats.",
        start=start,
        end=start + timedelta(hours=2),
        prices={"p": 5000, "s": 3000},
    )
    seats_by_row = [[c for c, cell in enumerate(row["cells"]) if cell] for row in session["layout"]["rows"]]
    return Hall(session_id=str(session["_id"]), seats_by_row=seats_by_row), session["seatsTotal"]


def summary(args, seats: int, stats, faults, verdict, elapsed: float) -> str:
    statuses = ", ".join(f"{code}: {n}" for code, n in sorted(stats.statuses.items()))
    injected = [f"{at}s {what}" for at, what in faults.injected if "again" not in what]
    lines = [
        f"chaos run ({args.size}{', CONTROL: hold filter weakened' if args.control else ''}): "
        f"{stats.buyers} buyers on one session of {seats} seats; arrivals over {args.duration:.0f}s, "
        f"hold {args.hold}s, gunicorn {args.workers}x{args.threads}, seed {args.seed}, {elapsed:.0f}s in all",
        f"buyer kinds: {dict(stats.kinds)}",
        f"requests: {stats.requests} ({statuses}); dropped connections: {stats.transport_errors}; "
        f"retries: {stats.retries}; cut off at the deadline: {stats.cut_off}",
        f"holds: won {stats.holds_won}, lost {stats.holds_lost}, refused by a rule {stats.holds_refused}, "
        f"rate limited {stats.rate_limited}; releases {stats.releases}",
        f"checkouts: ok {stats.checkouts_ok}, hold ended first {stats.checkouts_failed}, "
        f"no answer {stats.checkouts_unknown}; replayed after success {stats.replays}; "
        f"payments: paid {stats.payments_paid} (late {stats.paid_late}), declined {stats.declined} (gave up "
        f"{stats.gave_up_after_decline}), 3-D Secure {stats.three_d_secure}, refunded late {stats.refunded_late}, "
        f"other outcome {dict(stats.payment_other)}; "
        f"abandoned carts {stats.abandoned}; canceled {stats.canceled}; left with no seats {stats.empty_handed}",
        f"database: {verdict.orders} paid orders, {verdict.seats_sold} seats sold; carts by state: "
        f"{verdict.carts_by_state} (expired carts: {verdict.carts_by_state.get(CartState.EXPIRED, 0)})",
        f"faults injected ({len(injected)}): " + "; ".join(injected),
        f"final reconcile pass: {verdict.reconcile_report}",
        f"seats in two paid orders: {verdict.double_sold_seats}; seats held by two carts: {verdict.double_held_seats}",
        f"paid orders without their seats: {verdict.paid_without_seats}; money kept at Stripe for unsold seats: "
        f"{verdict.money_kept_unsold / 100:.2f} in {verdict.orders_keeping_money} orders "
        f"(Stripe took {verdict.stripe_taken / 100:.2f}, refunded {verdict.stripe_refunded / 100:.2f})",
        "invariants: " + ("OK" if not verdict.invariant_breaches else f"{len(verdict.invariant_breaches)} BREACHES"),
    ]
    for breach in verdict.invariant_breaches[:15]:
        lines.append(f"  invariant breach: {breach}")
    for breach in verdict.breaches[:15]:
        lines.append(f"  breach: {breach}")
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parse_args(argv)
    # Its own handler: Django's LOGGING (applied by django.setup() below) owns the root logger.
    log = logging.getLogger("chaos")
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s chaos: %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    started = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="chaos-"))
    db_name = f"chaos_{uuid.uuid4().hex[:8]}"

    from .stack import Stack

    stack = Stack(
        workdir,
        web_workers=args.workers,
        web_threads=args.threads,
        settings_env=settings_env(args, db_name),
        unsafe=args.control,
    )
    verdict = None
    try:
        stack.start_data_services()
        os.environ.update(stack.env())  # this process reads and checks the same database
        import django

        django.setup()
        from booking.core import mongo

        mongo.ensure_indexes()
        hall, seats = seed_hall(args.rows)
        stack.start_app()
        log.info("stack up at %s (logs in %s); %d buyers coming", stack.base_url, stack.logs, args.buyers)

        from .buyers import Stats, run_buyers
        from .faults import FaultLog, run_faults

        stats, faults, stop = Stats(), FaultLog(), threading.Event()
        injector = None
        if not args.no_faults:
            injector = threading.Thread(
                target=run_faults,
                args=(stack, args.duration, stop, faults),
                kwargs={"seed": args.seed, "mongo": not args.no_mongo_fault},
                daemon=True,
            )
            injector.start()
        asyncio.run(
            run_buyers(
                stack.base_url,
                hall,
                stripe_url=stack.stripe_url,
                buyers=args.buyers,
                duration=args.duration,
                hold_seconds=args.hold,
                concurrency=args.concurrency,
                seed=args.seed,
                stats=stats,
            )
        )
        stop.set()
        if injector is not None:
            injector.join(timeout=120)
        log.info("buyers done; stopping the app for the final checks")
        stack.stop_app()
        time.sleep(6)  # past BOOKING_CHECKOUT_STUCK_SECONDS, so reconcile finishes any cut-off checkout

        from .verify import final_checks

        verdict = final_checks(stats, stack.log_text("web"), stripe_url=stack.stripe_url)
        print(summary(args, seats, stats, faults, verdict, time.monotonic() - started), flush=True)
    finally:
        if verdict is not None and stack.external_mongo:
            from booking.core import mongo

            mongo.get_client().drop_database(db_name)
        stack.stop_all()
        if args.keep or verdict is None or verdict.ok == args.control:
            print(f"run directory kept: {workdir}", flush=True)
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    if args.control:
        caught = not verdict.ok
        print(
            "CONTROL PASS: the harness caught the weakened hold filter"
            if caught
            else "CONTROL FAIL: the weakened hold filter went unnoticed",
            flush=True,
        )
        return 0 if caught else 1
    print("RESULT: PASS" if verdict.ok else "RESULT: FAIL", flush=True)
    return 0 if verdict.ok else 1


if __name__ == "__main__":
    sys.exit(main())
