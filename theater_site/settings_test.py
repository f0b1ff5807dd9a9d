"""Settings for the test suite (pyproject.toml, scripts/test.sh): the app's settings with a fast
password hasher and without the dev stack's .run/dev.env.

Subprocesses the tests start (Celery workers, gunicorn, manage.py) inherit DEV_ENV_FILE="" too.
"""

import os
import tempfile

os.environ["DEV_ENV_FILE"] = ""  # before the import: the tests never reach a running dev stack

from theater_site.settings import *  # noqa: E402, F403

# Django's default hasher (PBKDF2, over a million iterations) costs a quarter of a second or more
# per user created with a password; the tests check permissions, not hashing.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Each test sees its own writes on the what's-on page at once (test_whats_on_cache.py turns the
# one-second page cache on to test it).
BOOKING_WHATS_ON_CACHE_SECONDS = 0
# ... and on the live map (test_live_versions.py turns the kept version on to test it).
BOOKING_LIVE_MAP_VERSION_SECONDS = 0
# What a request queued is in Redis when it returns (test_publish.py turns the publisher thread on).
BOOKING_PUBLISH_AFTER_ANSWER = False
# The test processes keep Python's collector as it is (test_collector.py drives the keeper itself).
WEB_GC_FREEZE_SECONDS = 0

# The test database in a file, not in memory. With an in-memory SQLite database Django's live
# server shares one connection between its request threads, and a page that sends several
# requests at once (the door phone back online: its list, counts and sync together) used it from
# two threads at a time ("bad parameter or other API misuse": a session read failed and the phone
# was told to sign in again). pytest-django gives each xdist worker its own file (a _gwN suffix).
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    DATABASES["default"]["TEST"] = {"NAME": os.path.join(tempfile.gettempdir(), f"theater-tests-{os.getpid()}.sqlite3")}  # noqa: F405
    # nothing of it needs to survive a crash: no fsync per commit
    DATABASES["default"].setdefault("OPTIONS", {})["init_command"] = "PRAGMA synchronous=OFF"  # noqa: F405
