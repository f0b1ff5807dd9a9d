"""``python -m bench.profile [checkout|whats_on] [--method box_office|card] [--html FILE]``: where one
request's time goes, wall clock (pyinstrument: CPU and waiting alike), in this process against the
benchmark's real stack (devmongo, Redis, localstripe). pyinstrument is not one of our requirements:
``pip install --target /tmp/prof pyinstrument`` and run with ``PYTHONPATH=/tmp/prof``.

Each request is made a few times first (caches, connections), then profiled ``--repeat`` times in
one session of the profiler: the tree shows where the sum of their time went.
"""

import argparse
import contextlib
import os
import sys
import time

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
os.environ.setdefault("LOG_LEVEL", "WARNING")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__)
    parser.add_argument("what", choices=["checkout", "whats_on"])
    parser.add_argument("--method", default="box_office", choices=["box_office", "card"])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--html", default="")
    parser.add_argument(
        "--cpu", action="store_true", help="cProfile on CPU time (time.process_time), not pyinstrument's wall clock"
    )
    args = parser.parse_args(argv)

    import django

    django.setup()
    from datetime import timedelta

    from django.conf import settings
    from django.test import Client

    if args.cpu:
        import cProfile
        import pstats
    else:
        from pyinstrument import Profiler

    from booking import clock
    from booking.services.payment_settings import set_box_office
    from booking.tests.commands import counting_commands

    from . import data, flows
    from .stack import Stack

    with Stack() as stack:
        stack.use_in_this_process()
        from booking import mongo

        mongo.ensure_indexes()
        settings.ALLOWED_HOSTS = ["*"]
        settings.BOOKING_HOLD_RATE = "1000000/m"
        hall = data.grand_hall()
        sessions = [data.performance(hall, f"Profile {i}", 7 + i) for i in range(3)]
        for i in range(9):
            data.performance(hall, f"Repertoire {i}", 20 + i)
        for s in sessions:
            set_box_office(s["_id"], enabled=True, deadline_minutes=30)
        groups = [(str(s["_id"]), g) for s in sessions for block in data.sale_groups(s) for g in block]
        profiler = cProfile.Profile(time.process_time) if args.cpu else Profiler(interval=0.0005)
        timings: list[float] = []
        cpu_times: list[float] = []
        hold_cpu_times: list[float] = []  # the hold before each checkout, for comparison
        commands: list[str] = []

        def checkout_once(n: int, profile: bool, count: bool = False) -> float:
            session, seats = groups[n]
            c = Client(REMOTE_ADDR=f"10.1.{n // 250}.{n % 250 + 1}")
            c.get(f"/sessions/{session}/")
            hold_cpu = time.process_time()
            held = c.post(f"/sessions/{session}/hold", {"seats": seats, **flows.DECLARED}, HTTP_HX_REQUEST="true")
            hold_cpu_times.append(time.process_time() - hold_cpu)
            assert held.status_code == 200, held.status_code
            form = {"name": f"Buyer {n}", "email": f"buyer{n}@example.org", "method": args.method}
            started, cpu = time.perf_counter(), time.process_time()
            if profile:
                profiler.enable() if args.cpu else profiler.start()
            with counting_commands() if count else contextlib.nullcontext() as counter:
                done = c.post("/checkout/", form)
            if profile:
                profiler.disable() if args.cpu else profiler.stop()
            seconds = time.perf_counter() - started
            cpu_times.append(time.process_time() - cpu)
            if count:
                commands[:] = [" ".join(c) for c in counter.commands]
            assert done.status_code == 302 and "/orders/" in done["Location"], (done.status_code, done.content[:300])
            return seconds

        def whats_on_once(n: int, profile: bool, count: bool = False) -> float:
            c = Client()
            started, cpu = time.perf_counter(), time.process_time()
            if profile:
                profiler.enable() if args.cpu else profiler.start()
            with counting_commands() if count else contextlib.nullcontext() as counter:
                r = c.get("/")
            if profile:
                profiler.disable() if args.cpu else profiler.stop()
            cpu_times.append(time.process_time() - cpu)
            if count:
                commands[:] = [" ".join(c) for c in counter.commands]
            assert r.status_code == 200
            return time.perf_counter() - started

        once = checkout_once if args.what == "checkout" else whats_on_once
        once(0, False, count=True)  # the commands of one request (the monitor makes a new client: not timed)
        for n in range(1, 5):
            once(n, False)
        # unprofiled first: wall and CPU of this process (the client, Django and pymongo's side)
        unprofiled = sorted(once(n, False) for n in range(5, 5 + args.repeat))
        cpu_alone = sorted(cpu_times[5:])
        for n in range(5 + args.repeat, 5 + 2 * args.repeat):
            timings.append(once(n, True))
        _ = clock, timedelta
        timings.sort()
        print(
            f"{args.what} ({args.method if args.what == 'checkout' else 'GET /'}): {args.repeat} requests, "
            f"unprofiled median {unprofiled[len(unprofiled) // 2] * 1000:.2f} ms wall, "
            f"{cpu_alone[len(cpu_alone) // 2] * 1000:.2f} ms CPU in this process; profiled median "
            f"{timings[len(timings) // 2] * 1000:.2f} ms; load average {os.getloadavg()[0]:.1f}"
        )
        print(f"MongoDB commands ({len(commands)}): {', '.join(commands)}")
        if hold_cpu_times:
            holds = sorted(hold_cpu_times[5 : 5 + args.repeat])
            print(f"the hold before each checkout: {holds[len(holds) // 2] * 1000:.2f} ms CPU (median, unprofiled)")
        if args.cpu:
            stats = pstats.Stats(profiler)
            stats.sort_stats("tottime").print_stats(35)
            stats.sort_stats("cumulative").print_stats(60)
            return 0
        print(profiler.output_text(unicode=False, color=False, show_all=False))
        if args.html:
            with open(args.html, "w") as f:
                f.write(profiler.output_html())
    return 0


if __name__ == "__main__":
    sys.exit(main())
