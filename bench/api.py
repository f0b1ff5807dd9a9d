"""``python -m bench.api [--scale 1.0] [--samples 30]``: the REST API's server time at volume.

The data of ``bench.reports`` (1,000 sessions of 1,200 seats, 500,000 orders; ``--scale`` shrinks
both), then the API through Django's test client (the whole stack: middleware, token, scope, the
view, the call log's insert), timed per request and its MongoDB commands counted. The goals
(docs/performance.md, "REST API"): a performance's availability under 5 ms, a page of the order
list under 100 ms at 500,000 orders. The rate limit's Redis round trip is left out (no Redis in
this run: ``BOOKING_API_RATE`` empty); it is one EVALSHA, well under a millisecond on loopback.

MongoDB: ``MONGODB_URI`` (a throwaway database ``bench_reports``), else devmongo started here with
``--notablescan``.
"""

import argparse
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

from bench.reports import Counter, build, cpu_seconds, setup_django, start_devmongo


def time_calls(data: dict, samples: int, log, db_pid: int | None) -> list[dict]:
    from django.conf import settings
    from django.test import Client

    from booking.core import mongo
    from booking.web import api_tokens

    settings.BOOKING_API_RATE = ""
    theater_id = data["sessions"][0]["theaterId"]
    token = api_tokens.create_token(
        theater_id=theater_id, name="bench", scopes=list(api_tokens.SCOPES), by="bench"
    ).token
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    rng = random.Random(11)
    picks = [rng.choice(data["sessions"]) for _ in range(samples)]
    # performances no call has read yet in this process: the layout's one read (then kept per process)
    unread = [s for s in data["sessions"] if s not in picks][:samples]

    def deep_cursor(params: dict, pages: int) -> str:
        cursor = ""
        for _ in range(pages):
            page = client.get(
                "/api/v1/orders/", {**params, **({"cursor": cursor} if cursor else {})}, secure=True
            ).json()
            cursor = page["next_cursor"]
        return cursor

    deep = deep_cursor({"limit": 50}, 20)

    def availability(s):
        return f"/api/v1/performances/{s['_id']}/availability/", {}

    calls = [
        ("availability, a performance's first call in this process", availability),
        ("availability of one performance", availability),
        ("a performance with its seat map (1,200 seats)", lambda s: (f"/api/v1/performances/{s['_id']}/", {})),
        ("performances, first page of 50", lambda s: ("/api/v1/performances/", {"limit": 50})),
        ("orders, first page of 50", lambda s: ("/api/v1/orders/", {"limit": 50})),
        ("orders, page 21 of 50 (cursor)", lambda s: ("/api/v1/orders/", {"limit": 50, "cursor": deep})),
        ("orders of one performance", lambda s: ("/api/v1/orders/", {"performance_id": str(s["_id"])})),
        ("orders: state refunded", lambda s: ("/api/v1/orders/", {"state": "refunded"})),
        ("orders: channel phone", lambda s: ("/api/v1/orders/", {"channel": "phone"})),
    ]
    counter = Counter()
    mongo.add_listener(counter)
    rows = []
    for label, request in calls:
        first_calls = label.startswith("availability, a performance's first call")
        for session in picks if not first_calls else picks[:1]:
            path, params = request(session)
            client.get(path, params, secure=True)  # warm: imports, this process's layout copies
        times, commands, app_cpu, db_cpu, size = [], [], [], [], 0
        for session in picks if not first_calls else unread:
            path, params = request(session)
            counter.n = 0
            began, cpu, db = time.perf_counter(), time.process_time(), cpu_seconds(db_pid)
            response = client.get(path, params, secure=True)
            times.append((time.perf_counter() - began) * 1000)
            app_cpu.append((time.process_time() - cpu) * 1000)
            db_cpu.append((cpu_seconds(db_pid) - db) * 1000)
            commands.append(counter.n)
            if response.status_code != 200:
                raise RuntimeError(f"{path} {params} answered {response.status_code}: {response.content[:200]}")
            size = max(size, len(response.content))
        row = {
            "call": label,
            "p50": statistics.median(times),
            "p90": sorted(times)[int(0.9 * (len(times) - 1))],
            "app_cpu": statistics.median(app_cpu),
            "db_cpu": statistics.median(db_cpu),
            "commands": max(commands),
            "bytes": size,
        }
        rows.append(row)
        log(f"{label}: p50 {row['p50']:.1f} ms, p90 {row['p90']:.1f} ms, {row['commands']} commands")
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.api", description=__doc__)
    parser.add_argument("--scale", type=float, default=1.0, help="share of 1,000 sessions / 500,000 orders")
    parser.add_argument("--samples", type=int, default=30, help="requests per row (random performances)")
    args = parser.parse_args(argv)

    def log(msg):
        print(msg, flush=True)

    proc, uri = start_devmongo()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-api-") as workdir:
            setup_django(uri, Path(workdir))
            began = time.monotonic()
            data = build(args.scale, log, summaries_too=False)
            log(f"built in {time.monotonic() - began:.0f} s")
            rows = time_calls(data, args.samples, log, proc.pid if proc else None)
            from booking.core import mongo

            server = "devmongo (the stand-in, --notablescan)" if proc else "MongoDB at MONGODB_URI"
            print()
            print(
                f"{len(data['sessions']):,} sessions, {mongo.orders().estimated_document_count():,} orders; "
                f"{server}; {args.samples} requests per row; Django test client, the whole stack."
            )
            print(f"Load average after the timings (1 min): {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores.")
            print()
            print("| call | p50 ms | p90 ms | app CPU ms (p50) | devmongo CPU ms (p50) | MongoDB commands | bytes |")
            print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
            for r in rows:
                print(
                    f"| {r['call']} | {r['p50']:.1f} | {r['p90']:.1f} | {r['app_cpu']:.1f} | {r['db_cpu']:.0f} "
                    f"| {r['commands']} | {r['bytes']:,} |"
                )
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
