"""``python -m bench.reports [--scale 0.01] [--samples 15]``: the sales reports at volume.

Builds 1,000 sessions (20 shows of 50 performances, 1,200 seats each) and 500,000 orders (1-3
tickets, paid, partly refunded, refunded, expired; online, box office, phone, complimentary;
check-ins) straight into the database (``--scale`` shrinks both for a quick run), then times the
report pages and downloads, the attendee list and the order list's filters through Django's test
client (the whole view: the aggregation, the Python roll-up, the template or the file), and counts
the MongoDB commands of each. Not a timed test: it prints a Markdown table (docs/performance.md,
"Reports").

MongoDB: ``MONGODB_URI`` (a throwaway database ``bench_reports``), else devmongo started here with
``--notablescan`` (every query of the pages must have its index, as in the tests).
"""

import argparse
import contextlib
import os
import random
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bson import ObjectId
from pymongo import monitoring

ROOT = Path(__file__).resolve().parent.parent
SHOWS = 20
SESSIONS = 1_000
ORDERS = 500_000
ROWS, SEATS_PER_ROW = 30, 40  # 1,200 seats


def start_devmongo() -> tuple[subprocess.Popen | None, str]:
    uri = os.environ.get("MONGODB_URI")
    if uri:
        return None, uri
    sys.path.insert(0, str(ROOT))
    from bench.stack import free_port, wait_for_port

    port = free_port()
    args = [sys.executable, "-m", "devmongo", "--port", str(port), "--notablescan", "--log-level", "warning"]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_port(port, proc, "devmongo")
    return proc, f"mongodb://127.0.0.1:{port}/"


def setup_django(uri: str, workdir: Path) -> None:
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "bench.settings",  # static files from the source folders
            "MONGODB_URI": uri,
            "MONGODB_DB": "bench_reports",
            "DATABASE_URL": f"sqlite:///{workdir / 'bench.sqlite3'}",
            "LOG_LEVEL": "WARNING",
            "DEBUG": "False",
            "SECRET_KEY": "bench-" + secrets.token_hex(16),
            "DEV_ENV_FILE": "",
            "MONGODB_TIMEOUT_MS": "600000",  # a big insert batch into a busy stand-in
        }
    )
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", "--noinput", verbosity=0)


def grid() -> str:
    rows = []
    for r in range(ROWS):
        cat = "p" if r < 8 else "s"
        label = chr(ord("A") + r) if r < 26 else f"A{chr(ord('A') + r - 26)}"
        half = cat * (SEATS_PER_ROW // 2)
        rows.append(f"{label}: {half}.{half}")
    return "\n".join(rows) + "\n"


def build(scale: float, log, summaries_too: bool = True) -> dict:
    from booking.core import mongo
    from booking.core.names import name_keys
    from booking.reports import summaries
    from booking.sales import offers
    from booking.sales.sessions import create_session
    from booking.venues.layouts import parse_grid
    from booking.venues.theaters import create_theater

    db = mongo.get_db()
    for name in ("theaters", "sessions", "orders", "carts", "session_sales"):
        db[name].drop()
    mongo.ensure_indexes()
    rng = random.Random(17)
    theater = create_theater(
        "Bench Hall", parse_grid(grid(), [{"code": "s", "name": "Stalls"}, {"code": "p", "name": "Premium"}])
    )
    types = [{"code": "full", "name": "Full price"}, {"code": "reduced", "name": "Reduced"}]
    offers.set_theater_ticket_types(theater["_id"], types)
    n_sessions = max(2, round(SESSIONS * scale))
    n_orders = max(20, round(ORDERS * scale))
    shows = max(1, n_sessions // (SESSIONS // SHOWS))  # series of 50 sessions, as at full size
    now = datetime.now(UTC)
    started = time.monotonic()
    sessions = []
    for i in range(n_sessions):
        start = now + timedelta(days=1 + i // shows, hours=i % shows % 4)
        session = create_session(
            theater["_id"],
            published=True,
            name=f"Show {i % shows:02d}",
            description="",
            start=start,
            end=start + timedelta(hours=2),
            prices={"s": 3900, "p": 5500},
        )
        sessions.append(session)
    log(f"{n_sessions} sessions in {time.monotonic() - started:.1f} s")

    # every session's free seats, handed out to orders in order (a sold seat is in one order)
    layout = sessions[0]["layout"]
    seat_list = [
        (r, c, row["label"], cell["label"], cell["cat"])
        for r, row in enumerate(layout["rows"])
        for c, cell in enumerate(row["cells"])
        if cell is not None
    ]
    next_seat = [0] * n_sessions
    sold_keys: list[list[tuple[int, int]]] = [[] for _ in range(n_sessions)]
    names = ["Ada Lovelace", "Grace Hopper", "Alan Turing", "Edsger Dijkstra", "Barbara Liskov", "Ken Thompson"]
    channels = ["box_office"] * 8 + ["phone"] * 5 + ["complimentary"] * 2  # 15 % of orders, the rest online
    started = time.monotonic()
    batch: list[dict] = []
    inserted = 0
    for n in range(n_orders):
        s_index = n % n_sessions
        session = sessions[s_index]
        count = rng.choice((1, 2, 2, 3))
        if next_seat[s_index] + count > len(seat_list):
            count = 0
        created = session["start"] - timedelta(days=rng.uniform(1, 60))
        state = rng.choices(["paid", "partially_refunded", "refunded", "expired"], [90, 4, 3, 3])[0]
        ref = f"B{n:07d}"  # unique (random ones would collide among 500,000)
        lines = []
        for _ in range(count if state != "expired" else 0):
            r, c, row_label, seat_label, cat = seat_list[next_seat[s_index]]
            next_seat[s_index] += 1
            reduced = rng.random() < 0.2
            price = {"s": 3900, "p": 5500}[cat] - (1000 if reduced else 0)
            line = {
                "sessionId": session["_id"],
                "key": f"{r}:{c}",
                "row": row_label,
                "seat": seat_label,
                "cat": cat,
                "price": price,
                "ticketType": "reduced" if reduced else "full",
                "ticketTypeName": "Reduced" if reduced else "Full price",
                "vat": "7",
                "ticket": ref + secrets.token_urlsafe(12),
            }
            if state == "paid" and rng.random() < 0.3:
                line["checkedIn"] = {"at": session["start"], "door": rng.choice(["North", "South"]), "by": "anna"}
            lines.append(line)
        if state != "expired" and not lines:
            state = "expired"
        refunded_lines = []
        if state == "refunded":
            refunded_lines, lines = lines, []
        elif state == "partially_refunded":
            if len(lines) > 1:
                refunded_lines, lines = lines[:1], lines[1:]
            else:
                state = "paid"
        for line in lines:
            sold_keys[s_index].append(tuple(int(x) for x in line["key"].split(":")))
        name = rng.choice(names)
        order = {
            "ref": ref,
            "cartId": ObjectId(),
            "owner": f"s:{secrets.token_hex(6)}",
            "name": name,
            "email": f"{ref.lower()}@example.com",
            "nameKeys": name_keys(name),
            "lines": lines,
            "sessions": [{"_id": session["_id"], "name": session["name"], "start": session["start"]}],
            "fee": {"amount": 0, "vat": "19"},
            "total": sum(line["price"] for line in lines + refunded_lines),
            "currency": "EUR",
            "state": state,
            "method": "card",
            "createdOn": created,
            "purgeAt": created + timedelta(days=3650),
            "mail": "sent",
        }
        if rng.random() < 0.15:
            order["channel"] = rng.choice(channels)
        if state != "expired":
            order["paidOn"] = created + timedelta(minutes=3)
            seller = rng.choice(["bench", "anna"]) if "channel" in order or rng.random() < 0.15 else ""
            if seller:  # sold at the counter: the till's and the takings' cash, card terminal, comps
                order["channel"] = order.get("channel") or "box_office"
                order["method"] = rng.choice(["cash", "cash", "card_terminal", "complimentary"])
                order["soldBy"] = {"name": seller}
            provider = "counter" if seller else "stripe"
            order["paidWith"] = {
                "provider": provider,
                "id": f"{provider}-{ref}",
                "amount": order["total"],
                "on": order["paidOn"],
                **({"by": seller} if seller else {}),
            }
            if refunded_lines:
                order["refunds"] = [
                    {
                        "_id": f"r{ref}",
                        "amount": sum(line["price"] for line in refunded_lines),
                        "payment": {"provider": provider, "id": order["paidWith"]["id"]},
                        "status": "succeeded",
                        "createdOn": order["paidOn"] + timedelta(days=1),
                        **({"by": seller} if seller else {}),
                    }
                ]
        if refunded_lines:
            order["refundedLines"] = refunded_lines
        batch.append(order)
        if len(batch) == 2000:
            mongo.orders().insert_many(batch, ordered=False)
            inserted += len(batch)
            batch = []
            if inserted % 20_000 == 0:
                log(f"{inserted} orders ({time.monotonic() - started:.0f} s)")
    if batch:
        mongo.orders().insert_many(batch, ordered=False)
    log(f"{n_orders} orders in {time.monotonic() - started:.1f} s")
    counted = time.monotonic()
    if summaries_too:
        summaries.refresh_all()  # what `manage.py refresh_report_summaries --all` does after a deploy
    summaries_s = time.monotonic() - counted
    log(f"every session's sales summary counted in {summaries_s:.1f} s")
    for s_index, keys in enumerate(sold_keys):  # the grids agree with the orders
        if keys:
            sets = {f"seats.{r}.{c}": 2 for r, c in keys}
            mongo.sessions().update_one(
                {"_id": sessions[s_index]["_id"]}, {"$set": sets, "$inc": {"seatsAvailable": -len(keys)}}
            )
    return {"sessions": sessions, "orders": n_orders, "shows": shows, "summaries_s": summaries_s}


class Counter(monitoring.CommandListener):
    """Counts the MongoDB commands (pymongo's command monitoring) of one request."""

    def __init__(self):
        self.n = 0

    def started(self, event):
        if event.command_name not in ("endSessions", "hello", "isMaster", "ping"):
            self.n += 1

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU of a process (Linux /proc), 0 without one."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def order_list_pages(sessions) -> list:
    """The staff order list's pages and exports (booking/control/orders.py): the first page, a page
    deep in the list (by its cursor), and one performance's orders as CSV and XLSX."""
    from booking.sales.order_search import OrderFilters, search_orders

    def deep_page(_session):
        page = search_orders(filters=OrderFilters(), limit=50)
        for _ in range(20):  # the 21st page: the cursor's range, not a skip
            page = search_orders(filters=OrderFilters(), cursor=page.next_cursor, limit=50)
        return f"/admin/booking/order/?cursor={page.next_cursor}"

    export = "/admin/booking/order/export"
    today = datetime.now(UTC).date()
    week = f"first={(today - timedelta(days=6)).isoformat()}&last={today.isoformat()}"

    def forget_kept_days(_session):
        from booking.core import mongo

        mongo.takings_days().delete_many({})

    def closed_yesterday(_session):
        """The bench seller's till last closed a day ago: the open till is a day of sales."""
        from booking.core import mongo

        mongo.till_closings().delete_many({"till": "bench"})
        until = datetime.now(UTC) - timedelta(days=1)
        mongo.till_closings().insert_one(
            {"_id": "bench:1", "till": "bench", "seq": 1, "until": until, "stamped": True, "day": "", "seller": "bench"}
        )

    return [
        ("orders: the list, first page", lambda s: "/admin/booking/order/", None, None),
        ("orders: the list, page 22 (cursor)", deep_page, None, None),
        ("orders: the list, name typed", lambda s: "/admin/booking/order/?q=ada", None, None),
        ("orders: one performance, CSV export", lambda s: f"{export}.csv?session={s['_id']}", None, None),
        ("orders: one performance, XLSX export", lambda s: f"{export}.xlsx?session={s['_id']}", None, None),
        ("takings: today, page", lambda s: "/admin/booking/report/takings/", None, None),
        ("takings: today, CSV", lambda s: "/admin/booking/report/takings.csv", None, None),
        ("takings: 7 days, page", lambda s: f"/admin/booking/report/takings/?{week}", None, None),
        (
            "takings: 7 days, page, no day kept yet (each past day counted and kept)",
            lambda s: f"/admin/booking/report/takings/?{week}",
            forget_kept_days,
            None,
        ),
        ("takings: 7 days, CSV", lambda s: f"/admin/booking/report/takings.csv?{week}", None, None),
        (
            "till: a seller's open till (a day of sales)",
            lambda s: "/admin/booking/tillclosing/",
            closed_yesterday,
            None,
        ),
    ]


def time_pages(data: dict, samples: int, log, db_pid: int | None = None, only_orders: bool = False) -> list[dict]:
    from django.contrib.auth.models import User
    from django.test import Client, override_settings

    from booking.core import mongo
    from booking.reports import marks

    user = User.objects.filter(username="bench").first() or User.objects.create_superuser("bench", "b@x.example", "pw")
    client = Client()
    client.force_login(user)
    rng = random.Random(5)
    sessions = data["sessions"]
    picks = [rng.choice(sessions) for _ in range(samples)]
    some_ref = mongo.orders().find_one({"state": "paid", "lines.sessionId": picks[0]["_id"]}, {"ref": 1})["ref"]
    day = (picks[0]["start"] - timedelta(days=10)).date().isoformat()
    series = sum(1 for s in sessions if s["name"] == picks[0]["name"])
    by_name: dict[str, list] = {}
    for s in sessions:
        by_name.setdefault(s["name"], []).append(s)

    def one_changed(s):
        """A sale in one session of the series since its count: its summary is marked (the page
        recounts that one session)."""
        other = by_name[s["name"]][len(by_name[s["name"]]) // 2]
        order = mongo.orders().find_one({"lines.sessionId": other["_id"]}, {"ref": 1, "lines.sessionId": 1})
        mongo.orders().update_one(
            {"_id": order["_id"], "ref": order["ref"]}, {"$push": marks.push(marks.sessions_of(order))}
        )

    from_orders = {"BOOKING_REPORTS_SOURCE": "orders"}  # counted from the orders at each read
    session_url, series_url = "/admin/booking/report/session/{}/", "/admin/booking/report/series/{}/"
    pages = [
        ("session report page", lambda s: session_url.format(s["_id"]), None, None),
        ("session chart (SVG)", lambda s: session_url.format(s["_id"]) + "chart.svg", None, None),
        ("session chart (SVG), drawn before", lambda s: session_url.format(s["_id"]) + "chart.svg", "twice", None),
        ("session figures CSV", lambda s: session_url.format(s["_id"]) + "sales.csv", None, None),
        ("session figures XLSX", lambda s: session_url.format(s["_id"]) + "sales.xlsx", None, None),
        (f"series report page ({series} sessions)", lambda s: series_url.format(s["_id"]), None, None),
        ("series report page, 1 session changed since", lambda s: series_url.format(s["_id"]), one_changed, None),
        (f"series figures XLSX ({series} sessions)", lambda s: series_url.format(s["_id"]) + "sales.xlsx", None, None),
        (f"series chart ({series} sessions)", lambda s: series_url.format(s["_id"]) + "chart.svg", None, None),
        ("BEFORE: session report page, from the orders", lambda s: session_url.format(s["_id"]), None, from_orders),
        ("BEFORE: series report page, from the orders", lambda s: series_url.format(s["_id"]), None, from_orders),
        (
            "BEFORE: series figures XLSX, from the orders",
            lambda s: series_url.format(s["_id"]) + "sales.xlsx",
            None,
            from_orders,
        ),
        ("attendee list CSV", lambda s: session_url.format(s["_id"]) + "attendees.csv", None, None),
        ("attendee list PDF", lambda s: session_url.format(s["_id"]) + "attendees.pdf", None, None),
        ("orders of a session", lambda s: f"/admin/booking/order/?session={s['_id']}", None, None),
        ("orders: state refunded", lambda s: "/admin/booking/order/?state=refunded", None, None),
        ("orders: channel phone", lambda s: "/admin/booking/order/?channel=phone", None, None),
        ("orders: one day", lambda s: f"/admin/booking/order/?since={day}&until={day}", None, None),
        ("orders: reference typed (opens it)", lambda s: f"/admin/booking/order/?q={some_ref}", None, None),
    ]
    pages = [p for p in pages if not only_orders or p[0].startswith("orders")]
    pages += order_list_pages(sessions)
    counter = Counter()
    mongo.add_listener(counter)  # the app's client is made again with it
    rows = []
    for label, path, before, overrides in pages:
        context = override_settings(**overrides) if overrides else contextlib.nullcontext()
        with context:
            row = _time_page(client, label, path, before, picks, counter, db_pid)
        rows.append(row)
        log(f"{label}: p50 {row['p50']:.0f} ms, app CPU {row['app_cpu']:.0f} ms, db CPU {row['db_cpu']:.0f} ms")
    return rows


def _time_page(client, label, path, before, picks, counter, db_pid) -> dict:
    """One row: ``path`` of each picked session, timed; ``before`` runs first (untimed): "twice"
    requests it once before, a function changes something."""
    client.get(path(picks[0]), secure=True)  # warm: imports (matplotlib, openpyxl), template loading
    times, commands, size, app_cpu, db_cpu = [], [], 0, [], []
    for session in picks:
        if before == "twice":
            client.get(path(session), secure=True)
        elif before is not None:
            before(session)
        url = path(session)  # before the clock starts (a deep page's cursor is looked up)
        counter.n = 0
        began, cpu, db = time.perf_counter(), time.process_time(), cpu_seconds(db_pid)
        response = client.get(url, secure=True)
        body = b"".join(response.streaming_content) if response.streaming else response.content  # a stream: read
        times.append((time.perf_counter() - began) * 1000)
        app_cpu.append((time.process_time() - cpu) * 1000)
        db_cpu.append((cpu_seconds(db_pid) - db) * 1000)
        commands.append(counter.n)
        if response.status_code not in (200, 302):
            raise RuntimeError(f"{url} answered {response.status_code}")
        size = max(size, len(body))
    return {
        "page": label,
        "p50": statistics.median(times),
        "max": max(times),
        "app_cpu": statistics.median(app_cpu),
        "db_cpu": statistics.median(db_cpu),
        "commands": max(commands),
        "bytes": size,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.reports", description=__doc__)
    parser.add_argument("--scale", type=float, default=1.0, help="share of 1,000 sessions / 500,000 orders")
    parser.add_argument("--samples", type=int, default=15, help="random sessions each page is timed on")
    parser.add_argument(
        "--only-orders", action="store_true", help="the order list's pages and exports only (no summaries counted)"
    )
    args = parser.parse_args(argv)

    def log(msg):
        print(msg, flush=True)

    proc, uri = start_devmongo()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-reports-") as workdir:
            setup_django(uri, Path(workdir))
            began = time.monotonic()
            data = build(args.scale, log, summaries_too=not args.only_orders)
            log(f"built in {time.monotonic() - began:.0f} s")
            rows = time_pages(data, args.samples, log, proc.pid if proc else None, only_orders=args.only_orders)
            from booking.core import mongo

            n_sessions = len(data["sessions"])
            server = "devmongo (the stand-in, --notablescan)" if proc else "MongoDB at MONGODB_URI"
            print()
            print(
                f"{n_sessions:,} sessions ({data['shows']} shows), {data['orders']:,} orders "
                f"({mongo.orders().estimated_document_count():,} stored); {server}; "
                f"{args.samples} random sessions per row; Django test client, whole view."
            )
            print()
            print(f"Load average after the timings (1 min): {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores.")
            print()
            print(
                f"Every session's sales summary counted once (`manage.py refresh_report_summaries --all`): "
                f"{data['summaries_s']:.0f} s. Rows marked BEFORE read the figures from the orders at each "
                "request (BOOKING_REPORTS_SOURCE=orders), as every report did before the summaries."
            )
            print()
            print("| page | p50 ms | max ms | app CPU ms (p50) | devmongo CPU ms (p50) | MongoDB commands | bytes |")
            print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
            for r in rows:
                print(
                    f"| {r['page']} | {r['p50']:.0f} | {r['max']:.0f} | {r['app_cpu']:.0f} | {r['db_cpu']:.0f} "
                    f"| {r['commands']} | {r['bytes']:,} |"
                )
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=180)  # freeing 500,000 documents takes a while on a busy machine
    return 0


if __name__ == "__main__":
    sys.exit(main())
