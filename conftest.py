"""Test harness: every test gets a MongoDB and a Redis of its own making.

MongoDB: the one in MONGODB_URI when set (a real server; the suite uses a throwaway database and
drops it), else the bundled stand-in (devmongo) started on a free port. Each test starts from an
empty database with the indexes in place. Redis: REDIS_URL when set, else a redis-server started
on a free port. Subprocesses (Celery workers, gunicorn) inherit both through the environment.

With pytest-xdist (scripts/test.sh starts one worker more than there are cores) each worker
process is a run of its own: its own devmongo and redis-server, its own database name, its own
Django test database; with REDIS_URL given, worker gwN uses that server's database number + N
(queues, broadcasts and cache apart).
"""

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from urllib.parse import urlsplit, urlunsplit

import pytest
from django.conf import settings
from django.utils import translation
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

# Every property test runs against a database: on a loaded machine (CI, xdist) generating an
# example can take longer than hypothesis's health check allows, which says nothing about the code.
hypothesis_settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
hypothesis_settings.load_profile("suite")


def pytest_configure(config):
    """The German catalog's .mo, compiled from locale/'s .po before any test renders a page (the
    .mo files are not in git: booking/core/catalogs.py)."""
    from booking.core.catalogs import compile_catalogs

    compile_catalogs(settings.BASE_DIR / "locale")


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist the slow and browser tests go first (otherwise in the order collected):
    the long ones start at once, spread over the workers, and the many short ones fill the gaps
    at the end, so no worker is left with a 20-second test when the others are done."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: 0 if item.get_closest_marker("slow") or item.get_closest_marker("browser") else 1)


def xdist_worker_number() -> int:
    """N of pytest-xdist's worker gwN, 0 without xdist."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return int(worker[2:]) if worker.startswith("gw") else 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def mongodb_uri():
    uri = os.environ.get("MONGODB_URI")
    if uri:
        yield uri
        return
    from devmongo import DevMongoServer

    # a one-member replica set, as production; notablescan: a query no index serves is refused
    # with MongoDB's error (the few scans on purpose are hinted); ties of a sort come back in a
    # random order, so nothing relies on an order MongoDB does not promise
    server = DevMongoServer(port=0, replset="rs0", notablescan=True, random_tie_break=True).start()
    yield server.uri  # mongodb://127.0.0.1:<port>/?replicaSet=rs0
    server.stop()


@pytest.fixture(scope="session")
def redis_url():
    url = os.environ.get("REDIS_URL")
    if url:
        parts = urlsplit(url)
        db = int(parts.path.strip("/") or 0) + xdist_worker_number()
        yield urlunsplit(parts._replace(path=f"/{db}"))
        return
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.exit("redis-server is not installed (apt-get install redis-server) and REDIS_URL is not set", 2)
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="test-redis-")
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", workdir],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    yield f"redis://127.0.0.1:{port}/0"
    proc.terminate()
    proc.wait(timeout=10)
    shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def _services(mongodb_uri, redis_url):
    """Point the app (and any subprocess it starts) at the test MongoDB and Redis."""
    from booking.core import mongo

    db_name = f"test_theater_{os.environ.get('PYTEST_XDIST_WORKER', 'main')}_{uuid.uuid4().hex[:8]}"
    os.environ.update({"MONGODB_URI": mongodb_uri, "MONGODB_DB": db_name, "REDIS_URL": redis_url})
    settings.MONGODB_URI = mongodb_uri
    settings.MONGODB_DB = db_name
    settings.REDIS_URL = redis_url
    settings.CELERY_BROKER_URL = redis_url
    settings.CACHES["default"]["LOCATION"] = redis_url
    # Every test client is 127.0.0.1 and Redis lives for the whole run: the lookup limit would
    # count across tests. It has its own tests (tests/security/test_limits.py), which set it.
    settings.BOOKING_LOOKUP_RATE = ""
    mongo.close_client()
    yield
    mongo.get_client().drop_database(db_name)
    mongo.close_client()


@pytest.fixture(scope="session")
def _indexed_collections(_services) -> frozenset[str]:
    """The collections ensure_indexes() makes; made once per run."""
    from booking.core import mongo

    mongo.ensure_indexes()
    return frozenset(mongo.get_db().list_collection_names())


@pytest.fixture(autouse=True)
def _english_after_each_test():
    """A request activates its buyer's language in the thread that served it (LocaleMiddleware), and
    nothing switches it back afterwards: each test starts and ends in the default language, so a
    German request in one test never words another test's messages."""
    translation.deactivate()
    yield
    translation.deactivate()


@pytest.fixture(autouse=True)
def mongo_db(_indexed_collections):
    """An empty booking database with every index, for each test: the collections ensure_indexes()
    makes, and no other.

    Those collections and their indexes stay and only their documents go: dropping them and building
    every index again cost more than many tests (and far more on a real MongoDB). ensure_indexes()
    then finds the indexes in place (one cheap command each) and puts back any a test dropped or
    changed (a TTL index rebuilt for another retention, say). Any other collection is dropped."""
    from booking.core import mongo

    db = mongo.get_db()
    for name in db.list_collection_names():
        if name in _indexed_collections:
            db[name].delete_many({})
        elif not name.startswith("system."):
            db.drop_collection(name)
    mongo.ensure_indexes()
    yield db


@pytest.fixture(scope="session")
def _test_redis(redis_url):
    import redis

    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


@pytest.fixture(autouse=True)
def _fresh_rate_limit_windows(_test_redis, monkeypatch):
    """Every test client is 127.0.0.1 and one Redis serves a worker's whole run, so the hold limit
    per address (120 a minute) would count the holds of every test in the same minute: each test
    starts with no rate-limit counts, in Redis and in the in-process fallback. And its window does
    not roll over halfway (a test expecting the third request of "2/m" refused would see it let
    in at a minute's turn); tests of the rollover move this clock themselves."""
    from booking.web import ratelimits

    start = time.time()
    monkeypatch.setattr(ratelimits, "window_seconds", lambda: start)
    keys = list(_test_redis.scan_iter(match="rl:*", count=1000))
    if keys:
        _test_redis.delete(*keys)
    ratelimits.local_counts = ratelimits.LocalCounts()
    # (The staff logins' failure counts, django-axes, are rows in Django's test database: each
    # test's rollback or flush takes them away, so no lockout outlives its test.)
    yield


# --- Chromium: one per test session (per xdist worker) ---
# The browser tests (tests/browser/) and the Content-Security-Policy tests (tests/security/) open
# their own browser contexts (own cookies: one buyer each) in it; launching Chromium costs a second
# or two, a context a few milliseconds. (Here rather than in a tests/conftest.py: a conftest module
# outside a package there would be the one `from conftest import free_port` finds.)

CHROMIUM = "/usr/bin/chromium"  # Debian's, never a downloaded one
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="session")
def chromium():
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def launch_chromium(chromium):
    """launch_chromium(*flags): a Chromium of its own with these extra command-line flags (a fake
    camera, say), for the one test that needs them; closed after the test."""
    browsers = []

    def launch(*flags: str):
        browser = chromium.browser_type.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, *flags])
        browsers.append(browser)
        return browser

    yield launch
    for browser in browsers:
        browser.close()


# A real localstripe for the run, and what a browser's Stripe.js does (booking/tests/localstripe.py).
pytest_plugins = ["booking.tests.localstripe"]
