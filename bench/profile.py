"""``python -m bench.profile [checkout|hold|hold_release|whats_on|refresh|hello] [--method box_office|card]
[--cpu | --spy FILE | --layers] [--html FILE]``:
where one request's time goes, in this process against the benchmark's real stack (devmongo,
Redis, localstripe).

Requests go straight to Django's WSGI handler, as gunicorn calls it: one handler for the whole run
(the middleware loaded once), form bodies urlencoded as a browser sends them, cookies kept, the
client's address in X-Forwarded-For, and the app in production mode (DEBUG off, the benchmark's
settings). So the CPU figures are what a gunicorn worker spends on the request, without the HTTP
parsing (django.test.Client adds a multipart parse, a middleware load per client and template
signals, which made the old figures several times too high).

Per request: wall and CPU of this process (Django and pymongo), the MongoDB stand-in's CPU over
the same requests, and the commands one request sends (the command monitor). ``--cpu``: cProfile
on CPU time; ``--spy FILE``: py-spy's samples of the requests while they hold the GIL, the truest
split of the CPU (bench/spy.py; cProfile's cost per call inflates call-heavy code); ``--layers``:
the CPU of each layer of a request (Django, the view, the services, each kind of MongoDB command,
the answer) timed exactly (bench/layers.py), to check the sampled shares against; otherwise
pyinstrument's wall-clock tree (``pip install --target /tmp/prof pyinstrument`` and run with
``PYTHONPATH=/tmp/prof``; neither is one of our requirements).

checkout: each buyer is new (cookies, address), opens the seat map, holds two seats, then checks
out; the checkout is what is profiled (the hold's CPU is printed beside it); hold: the same, with
the hold profiled. hold_release: the benchmark's C1 row, one buyer holding two seats and releasing
them again and again (each figure is the pair). whats_on: one browser
asks for the page again and again with its cookies, as the benchmark's clients do. refresh: one
browser that has the session's page and map asks for the live map with its ETag again and again
(Q3 unchanged: a 304); hello: the benchmark's hello world, the floor Q3 is measured against.
"""

import argparse
import contextlib
import io
import os
import sys
import time
import urllib.parse
from pathlib import Path

from . import layers, spy

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
os.environ.setdefault("LOG_LEVEL", "WARNING")


class Browser:
    """One buyer against a WSGI application: cookies and an address, like bench.load.Client."""

    def __init__(self, app, address: str):
        self.app, self.address = app, address
        self.cookies: dict[str, str] = {}

    def request(self, method: str, path: str, form: dict | None = None, headers: dict | None = None):
        body = urllib.parse.urlencode(form or {}, doseq=True).encode() if form is not None else b""
        path, _, query = path.partition("?")
        environ = {
            "REQUEST_METHOD": method,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "8000",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": "127.0.0.1",
            "HTTP_HOST": "127.0.0.1:8000",
            "HTTP_ACCEPT": "text/html",
            "HTTP_X_FORWARDED_FOR": self.address,
            "wsgi.input": io.BytesIO(body),
            "wsgi.url_scheme": "http",
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": True,
            "wsgi.multiprocess": True,
            "wsgi.run_once": False,
            "wsgi.version": (1, 0),
        }
        if form is not None:
            environ["CONTENT_TYPE"] = "application/x-www-form-urlencoded"
            environ["CONTENT_LENGTH"] = str(len(body))
            if "csrftoken" in self.cookies:
                environ["HTTP_X_CSRFTOKEN"] = self.cookies["csrftoken"]
        if self.cookies:
            environ["HTTP_COOKIE"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        for name, value in (headers or {}).items():
            environ["HTTP_" + name.upper().replace("-", "_")] = value
        answer: dict = {}

        def start_response(status, response_headers, exc_info=None):
            answer["status"] = int(status.split(" ", 1)[0])
            answer["headers"] = response_headers

        chunks = self.app(environ, start_response)
        try:
            answer["body"] = b"".join(chunks)
        finally:
            if hasattr(chunks, "close"):
                chunks.close()
        for name, value in answer["headers"]:
            if name.lower() == "set-cookie":
                key, _, rest = value.partition("=")
                self.cookies[key.strip()] = rest.split(";", 1)[0]
        answer["location"] = next((v for k, v in answer["headers"] if k.lower() == "location"), "")
        return answer


def print_spy_shares(raw: str, *, within: str, rows: int = 60) -> None:
    root = str(Path(__file__).resolve().parent.parent) + "/"
    total, inclusive, own = spy.shares(raw, within=within, root=root)
    print(f"py-spy: {total} samples holding the GIL inside {within}; share of them per frame")
    print("\nincluding what it calls:")
    for share in inclusive[:rows]:
        print(f"{share.percent:5.1f}%  {share.frame}")
    print("\nby package, its own code:")
    for share in spy.by_package(own):
        print(f"{share.percent:5.1f}%  {share.frame}")
    print("\nits own code (the top of the stack):")
    for share in own[: rows // 2]:
        print(f"{share.percent:5.1f}%  {share.frame}")


# pymongo's calls that send a command (a find's is its cursor's first next; a find_one's is in it)
MONGODB_COMMANDS = [
    "cursor:Cursor.next",
    "collection:Collection.find_one",
    "collection:Collection.find_one_and_update",
    "collection:Collection.update_one",
    "collection:Collection.insert_one",
]
# What --layers times: the whole request, then layers inside it (each counts its outermost call).
REQUEST_LAYERS = [
    layers.Layer("the request (Django's WSGI handler)", "django.core.handlers.wsgi:WSGIHandler.__call__"),
    layers.Layer("inside the middleware chain", "django.core.handlers.base:BaseHandler._get_response"),
    layers.Layer("the hold rate limit", "booking.web.ratelimits:HoldRateLimitMiddleware.process_view"),
    layers.Layer("the CSRF check", "django.middleware.csrf:CsrfViewMiddleware.process_view"),
    layers.Layer("the seat view's action", "booking.presale.views.seats:_seat_action"),
    layers.Layer("hold_seats", "booking.sales.holds:hold_seats"),
    layers.Layer("release_seats", "booking.sales.holds:release_seats"),
    layers.Layer("the answer (changed seats, cart)", "booking.presale.views.seats:_seat_change"),
    *(layers.Layer("pymongo, every command", f"pymongo.synchronous.{target}") for target in MONGODB_COMMANDS),
    *(
        layers.Layer(f"pymongo {target.rpartition('.')[2]}", f"pymongo.synchronous.{target}")
        for target in MONGODB_COMMANDS
    ),
    layers.Layer("Redis commands", "redis.client:Redis.execute_command"),
]


def print_layers(timer: layers.Timer) -> None:
    print("\nCPU per request, layer by layer (a layer's outermost calls; layers nest, so shares overlap):")
    for row in timer.rows(REQUEST_LAYERS):
        if row.calls_per_request:
            print(
                f"{row.micros_per_request:7.0f} us {row.percent:5.1f} %  {row.label}"
                f"  ({row.calls_per_request:.2f} calls a request)"
            )


def median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else float("nan")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__)
    parser.add_argument("what", choices=["checkout", "hold", "hold_release", "whats_on", "refresh", "hello"])
    parser.add_argument("--method", default="box_office", choices=["box_office", "card"])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--html", default="")
    parser.add_argument(
        "--cpu", action="store_true", help="cProfile on CPU time (time.process_time), not pyinstrument's wall clock"
    )
    parser.add_argument(
        "--spy",
        default="",
        help="py-spy's raw samples to this file (bench/spy.py): CPU by sampling, neither cProfile nor pyinstrument",
    )
    parser.add_argument(
        "--layers", action="store_true", help="the CPU of each layer of a request, timed exactly (bench/layers.py)"
    )
    parser.add_argument("--spy-binary", default="", help="the py-spy to run (default: the one on PATH)")
    args = parser.parse_args(argv)
    if args.spy or args.layers:
        args.cpu = False  # the sampled or layer-timed phase runs under neither profiler
    if args.spy:
        spy_binary = spy.find_binary(args.spy_binary)

    from .stack import Stack, app_env

    os.environ.update({k: v for k, v in app_env().items() if k not in os.environ or k == "DEBUG"})
    import django

    django.setup()
    from django.conf import settings
    from django.core.handlers.wsgi import WSGIHandler

    if args.cpu:
        import cProfile
        import pstats
    elif not (args.spy or args.layers):
        from pyinstrument import Profiler

    from booking.payments.settings import set_box_office
    from booking.tests.commands import counting_commands

    from . import data, flows
    from .cpu import process_cpu_seconds

    with Stack(web=False) as stack:
        stack.use_in_this_process()
        from booking.core import mongo

        mongo.ensure_indexes()
        settings.ALLOWED_HOSTS = ["*"]
        app = WSGIHandler()
        db_pid = (stack._pids("devmongo") or [None])[0]
        hall = data.grand_hall()
        sessions = [data.performance(hall, f"Profile {i}", 7 + i) for i in range(3)]
        for i in range(9):
            data.performance(hall, f"Repertoire {i}", 20 + i)
        for s in sessions:
            set_box_office(s["_id"], enabled=True, deadline_minutes=30)
        groups = [(str(s["_id"]), g) for s in sessions for block in data.sale_groups(s) for g in block]
        profiler = (
            None
            if args.spy or args.layers
            else cProfile.Profile(time.process_time)
            if args.cpu
            else Profiler(interval=0.0005)
        )
        walls: list[float] = []
        cpu_times: list[float] = []
        hold_cpu_times: list[float] = []  # the hold before each checkout, for comparison
        commands: list[str] = []
        reader = Browser(app, "10.2.0.1")

        def checkout_once(n: int, profile: bool, count: bool = False) -> tuple[float, float]:
            session, seats = groups[n]
            buyer = Browser(app, f"10.1.{n // 250}.{n % 250 + 1}")
            buyer.request("GET", f"/sessions/{session}/")
            hold_cpu = time.process_time()
            if profile and args.what == "hold":
                profiler.enable() if args.cpu else profiler.start()
            held = buyer.request("POST", f"/sessions/{session}/hold", {"seats": seats, **flows.DECLARED}, flows.HTMX)
            if profile and args.what == "hold":
                profiler.disable() if args.cpu else profiler.stop()
            hold_cpu_times.append(time.process_time() - hold_cpu)
            assert held["status"] == 200, held["status"]
            form = {"name": f"Buyer {n}", "email": f"buyer{n}@example.org", "method": args.method}
            started, cpu = time.perf_counter(), time.process_time()
            if profile and args.what == "checkout":
                profiler.enable() if args.cpu else profiler.start()
            with counting_commands() if count else contextlib.nullcontext() as counter:
                done = buyer.request("POST", "/checkout/", form)
            if profile and args.what == "checkout":
                profiler.disable() if args.cpu else profiler.stop()
            if count:
                commands[:] = [" ".join(c) for c in counter.commands]
            assert done["status"] == 302 and "/orders/" in done["location"], (done["status"], done["body"][:300])
            return time.perf_counter() - started, time.process_time() - cpu

        def whats_on_once(n: int, profile: bool, count: bool = False) -> tuple[float, float]:
            started, cpu = time.perf_counter(), time.process_time()
            if profile:
                profiler.enable() if args.cpu else profiler.start()
            with counting_commands() if count else contextlib.nullcontext() as counter:
                answer = reader.request("GET", "/")
            if profile:
                profiler.disable() if args.cpu else profiler.stop()
            if count:
                commands[:] = [" ".join(c) for c in counter.commands]
            assert answer["status"] == 200, answer["status"]
            return time.perf_counter() - started, time.process_time() - cpu

        loop_buyer = Browser(app, "10.3.0.1")
        loop_seats = data.edge_pairs(sessions[2])[0]
        loop_path = f"/sessions/{sessions[2]['_id']}"

        def hold_release_once(n: int, profile: bool, count: bool = False) -> tuple[float, float]:
            """The benchmark's C1 row: one buyer holds two seats and releases them, again and
            again (its live cart written, not a new one); both requests timed and profiled."""
            started, cpu = time.perf_counter(), time.process_time()
            if profile:
                profiler.enable() if args.cpu else profiler.start()
            with counting_commands() if count else contextlib.nullcontext() as counter:
                held = loop_buyer.request(
                    "POST", f"{loop_path}/hold", {"seats": loop_seats, **flows.DECLARED}, flows.HTMX
                )
                released = loop_buyer.request("POST", f"{loop_path}/release", {"seats": loop_seats}, flows.HTMX)
            if profile:
                profiler.disable() if args.cpu else profiler.stop()
            if count:
                commands[:] = [" ".join(c) for c in counter.commands]
            assert held["status"] == 200 and flows.MINE in held["body"], held["status"]
            assert released["status"] == 200 and flows.MINE not in released["body"], released["status"]
            return time.perf_counter() - started, time.process_time() - cpu

        reads = {"whats_on": ("/", 200), "refresh": (f"/sessions/{sessions[0]['_id']}/map/", 304)}
        reads["hello"] = ("/bench/hello", 200)
        path, expected = reads.get(args.what, ("/", 200))
        etag: dict = {}

        def read_once(n: int, profile: bool, count: bool = False) -> tuple[float, float]:
            started, cpu = time.perf_counter(), time.process_time()
            if profile:
                profiler.enable() if args.cpu else profiler.start()
            with counting_commands() if count else contextlib.nullcontext() as counter:
                answer = reader.request("GET", path, headers=etag)
            if profile:
                profiler.disable() if args.cpu else profiler.stop()
            if count:
                commands[:] = [" ".join(c) for c in counter.commands]
            assert answer["status"] == expected, answer["status"]
            return time.perf_counter() - started, time.process_time() - cpu

        once = whats_on_once if args.what == "whats_on" else read_once if args.what in reads else checkout_once
        if args.what == "hold_release":
            once = hold_release_once
            loop_buyer.request("GET", f"{loop_path}/")  # its CSRF cookie, as the benchmark's clients have it
            for n in range(4):
                once(n, False)
            once(4, False, count=True)
        elif args.what in ("refresh", "hello"):
            reader.request("GET", f"/sessions/{sessions[0]['_id']}/")  # the page first: its cookies
            first = reader.request("GET", reads["refresh"][0])
            etag = {"If-None-Match": next(v for k, v in first["headers"] if k.lower() == "etag")}
            if args.what == "hello":
                etag = {}
            once(0, False, count=True)
        elif args.what == "whats_on":
            settings.BOOKING_WHATS_ON_CACHE_SECONDS, lifetime = 0, settings.BOOKING_WHATS_ON_CACHE_SECONDS
            once(0, False)  # the CSRF cookie, as a returning browser has it
            once(0, False, count=True)  # a page built (no cache): its commands
            settings.BOOKING_WHATS_ON_CACHE_SECONDS = lifetime
        else:
            for n in range(4):  # this process's caches (a session's facts, its theater's VAT) filled
                once(n, False)
            once(4, False, count=True)  # the commands of one request (the monitor makes a new client: not timed)
        for n in range(1 if args.what in reads else 5, 5):
            once(n, False)
        # unprofiled first: wall and CPU of this process (Django and pymongo), and the stand-in's
        db_before = process_cpu_seconds(db_pid) if db_pid else None
        for n in range(5, 5 + args.repeat):
            wall, cpu = once(n, False)
            walls.append(wall)
            cpu_times.append(cpu)
        db_after = process_cpu_seconds(db_pid) if db_pid else None
        timer = None
        if args.spy:
            with spy.Spy(Path(args.spy), spy_binary):
                profiled = [once(n, False)[0] for n in range(5 + args.repeat, 5 + 2 * args.repeat)]
        elif args.layers:
            with layers.timing(REQUEST_LAYERS) as timer:
                app.load_middleware()  # Django keeps its chain's methods from load time: the timed ones now
                profiled = [once(n, False)[0] for n in range(5 + args.repeat, 5 + 2 * args.repeat)]
            app.load_middleware()
        else:
            profiled = [once(n, True)[0] for n in range(5 + args.repeat, 5 + 2 * args.repeat)]
        label = "C1" if args.what == "hold_release" else args.method
        per = {"hold_release": "per hold and release"}.get(
            args.what, "per request" if args.what in reads else "per checkout (its hold included)"
        )
        db_ms = (db_after - db_before) * 1000 / args.repeat if db_before is not None and db_after is not None else None
        print(
            f"{args.what} ({f'GET {path}' if args.what in reads else label}): "
            f"{args.repeat} {'pairs' if args.what == 'hold_release' else 'requests'}, "
            f"unprofiled median {median(walls) * 1000:.2f} ms wall, {median(cpu_times) * 1000:.2f} ms CPU in this "
            f"process (mean {sum(cpu_times) / len(cpu_times) * 1000:.2f} ms); profiled median "
            f"{median(profiled) * 1000:.2f} ms; load average {os.getloadavg()[0]:.1f}"
        )
        if db_ms is not None:
            print(f"MongoDB stand-in CPU {per}: {db_ms:.2f} ms (mean; /proc ticks of 10 ms, so coarse)")
        kind = (
            "a request" if args.what in reads else "a hold and release" if args.what == "hold_release" else "a checkout"
        )
        print(f"MongoDB commands of {kind} ({len(commands)}): {', '.join(commands)}")
        if hold_cpu_times:
            holds = hold_cpu_times[5 : 5 + args.repeat]
            print(f"the hold before each checkout: {median(holds) * 1000:.2f} ms CPU (median, unprofiled)")
        if args.spy:
            print_spy_shares(Path(args.spy).read_text(), within=once.__name__)
            return 0
        if timer is not None:
            print_layers(timer)
            return 0
        if args.cpu:
            stats = pstats.Stats(profiler)
            stats.sort_stats("tottime").print_stats(35)
            stats.sort_stats("cumulative").print_stats(70)
            return 0
        print(profiler.output_text(unicode=False, color=False, show_all=False))
        if args.html:
            with open(args.html, "w") as f:
                f.write(profiler.output_html())
    return 0


if __name__ == "__main__":
    sys.exit(main())
