"""Settings for theater_site, read from the environment (django-environ).

Every variable is documented in the README with its default.
"""

import os
from collections import ChainMap
from datetime import timedelta
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

BASE_DIR = Path(__file__).resolve().parent.parent

DEV_SECRET_KEY = "dev-only-insecure-key-change-me"  # noqa: S105 - refused when DEBUG is off


class _Env(environ.Env):
    # read_env below fills the front map, and only with variables the environment lacks: settings
    # see both, os.environ stays as it was (a process that reads it itself, such as the tests' or
    # the benchmark's harness deciding whether to start a MongoDB of its own, is not redirected).
    ENVIRON = ChainMap({}, os.environ)


env = _Env()
# The dev stack's settings: scripts/run.sh writes MONGODB_URI, REDIS_URL, SITE_URL (and the
# MONGODB_DB, DATABASE_URL or EMAIL_URL it was given) to .run/dev.env, so every manage.py command
# (worker_status, check_invariants, ...) reaches the running dev stack without typing them.
# Variables set in the environment win; DEV_ENV_FILE="" reads no file (the test settings), and
# neither does a run with DEBUG off (production).
DEV_ENV_FILE = env.str("DEV_ENV_FILE", default=str(BASE_DIR / ".run" / "dev.env"))
if DEV_ENV_FILE and env.bool("DEBUG", default=True) and Path(DEV_ENV_FILE).is_file():
    _Env.read_env(DEV_ENV_FILE)

DEBUG = env.bool("DEBUG", default=True)
SECRET_KEY = env.str("SECRET_KEY", default=DEV_SECRET_KEY)
if not DEBUG and SECRET_KEY == DEV_SECRET_KEY:
    raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off (the dev default is refused).")

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "axes",  # password guessing on the staff logins (booking/web/login_lockout.py)
    "ninja",  # the REST API's interactive docs use its bundled Swagger UI (no CDN: our CSP)
    "booking",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The buyer's language: the django_language cookie (set by the header's switch), else the
    # browser's Accept-Language, else English. URLs carry no language prefix (docs/architecture.md).
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # A login refused for too many failures answers 429 (booking/web/login_lockout.py). Outside the
    # booking middlewares below, which are synchronous: so is this one under ASGI too (axes'
    # asynchronous path passes the lockout no page).
    "axes.middleware.AxesMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "booking.web.buyer.BuyerCookieMiddleware",
    "booking.web.middleware.MongoUnavailableMiddleware",
    "booking.web.ratelimits.HoldRateLimitMiddleware",
    "booking.api.middleware.ApiCallLogMiddleware",  # every /api/ call logged with its token's name
]
if DEBUG:
    # runserver (and the tests' live server) serve static files themselves; WhiteNoise serves the
    # collected files (manage.py collectstatic) in production.
    MIDDLEWARE.remove("whitenoise.middleware.WhiteNoiseMiddleware")

ROOT_URLCONF = "theater_site.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",  # LANGUAGE_CODE, LANGUAGES (the header's switch)
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "theater_site.wsgi.application"

# Django's own tables only (users, auth, admin log, django sessions). Booking data is in MongoDB.
DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
# Staff requests (logins, the admin log) and the buyer's "found orders" list use Django's
# database-backed session: keep each thread's connection instead of opening one per request,
# checked before reuse. (A buyer's seat click reads no row: who is buying is in the signed
# ``buyer`` cookie, booking/web/buyer.py.)
DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("DB_CONN_MAX_AGE", default=60))
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Password guessing on the staff logins (django-axes; booking/web/login_lockout.py, README): failed
# sign-ins counted per client address and per user name, each on its own, in Django's database;
# at the limit both logins answer 429 until the cool-off after the last failure has passed.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
    "sesame.backends.ModelBackend",  # buyers' sign-in links (booking/accounts/buyers.py)
]
# A buyer's sign-in link: valid for 15 minutes, once (a second click, or a forwarded mail, is refused).
SESAME_MAX_AGE = env.int("BOOKING_SIGN_IN_LINK_SECONDS", default=15 * 60)
SESAME_ONE_TIME = True
AXES_FAILURE_LIMIT = env.int("BOOKING_LOGIN_FAILURE_LIMIT", default=10)
AXES_COOLOFF_TIME = timedelta(minutes=env.int("BOOKING_LOGIN_LOCKOUT_MINUTES", default=15))
AXES_LOCKOUT_PARAMETERS = ["ip_address", "username"]
AXES_RESET_ON_SUCCESS = True  # only the failures a sign-in explains (login_lockout.FailedLogins)
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False  # guessing on does not keep the owner out for ever
AXES_HANDLER = "booking.web.login_lockout.FailedLogins"
AXES_LOCKOUT_CALLABLE = "booking.web.login_lockout.locked_out_response"
AXES_CLIENT_IP_CALLABLE = "booking.web.ratelimits.client_address"  # BOOKING_TRUSTED_PROXIES, IPv6 by /64
AXES_DISABLE_ACCESS_LOG = True  # no table of every successful sign-in (the admin log has what staff did)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en"  # the source language, and the one shown when the browser asks for none we have
LANGUAGES = [("en", "English"), ("de", "Deutsch")]
LOCALE_PATHS = [BASE_DIR / "locale"]  # django.po / djangojs.po; the .mo files are compiled (booking/core/catalogs.py)
LANGUAGE_COOKIE_AGE = 365 * 24 * 3600  # the buyer's choice is remembered for a year
LANGUAGE_COOKIE_SAMESITE = "Lax"
TIME_ZONE = env.str("TIME_ZONE", default="Europe/Berlin")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"

# Django's sessions are database-backed (revocable staff logins, the buyer's "found orders" list).
# The buyer's owner token and cart id are not kept there but in the signed ``buyer`` cookie
# (booking/web/buyer.py), which takes its Secure flag and lifetime from these session settings.
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"

# Security headers (production hardening is switched on with DEBUG=False).
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
if not DEBUG:
    SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    LANGUAGE_COOKIE_SECURE = True
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # load balancers probe the app over plain HTTP

# Content-Security-Policy (Django's own middleware): scripts only from our origin, no inline
# script, no eval (htmx 2 needs neither; it talks only to its own origin: selfRequestsOnly, and
# connect-src backs that up). Inline styles are allowed: the seat map's category colours and
# htmx's indicator style are inline, and CSS cannot run code. docs/reliability.md has the details.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF, CSP.UNSAFE_INLINE],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "object-src": [CSP.NONE],
}

# --- MongoDB: the source of truth for theaters, sessions, carts and orders ---
MONGODB_URI = env.str("MONGODB_URI", default="mongodb://127.0.0.1:27017/")
MONGODB_DB = env.str("MONGODB_DB", default="theater")
MONGODB_TIMEOUT_MS = env.int("MONGODB_TIMEOUT_MS", default=3000)
# True once the collections are sharded (docs/deploy.md): orders' cartId index is then not unique
# (a collection sharded on ref can have no other unique index).
MONGODB_SHARDED = env.bool("MONGODB_SHARDED", default=False)

# --- Redis / Celery ---
REDIS_URL = env.str("REDIS_URL", default="redis://127.0.0.1:6379/0")
CELERY_BROKER_URL = REDIS_URL
CELERY_TASK_ACKS_LATE = True  # a killed worker's task is delivered again
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Fail fast when Redis is down: checkout must not hang on queuing the e-mail (reconcile re-queues
# it). max_retries bounds connecting for a publish; the worker's own reconnecting is not affected.
CELERY_BROKER_TRANSPORT_OPTIONS = {"socket_connect_timeout": 2, "socket_timeout": 5, "max_retries": 0}

CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        # Fail fast while Redis is down: the cache only serves rate limits, which then fail open.
        "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
    },
    # Template fragments ({% cache ... using="fragments" %}), in process: a lookup costs microseconds
    # where Redis costs a round trip. Keys name what a fragment is built from (booking/core/fragments.py).
    "fragments": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "booking-fragments",
        "KEY_FUNCTION": "booking.core.fragments.make_key",
        "TIMEOUT": 3600,
        "OPTIONS": {"MAX_ENTRIES": 2000},
    },
    # The sales reports' charts (SVG, about 30 KB), keyed on the figures they are drawn from
    # (booking/control/reports.py): drawing one costs ~150-250 ms of CPU, a repeat nothing.
    "charts": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "booking-charts",
        "KEY_FUNCTION": "booking.core.fragments.make_key",
        "TIMEOUT": 3600,
        "OPTIONS": {"MAX_ENTRIES": 200},
    },
}

# --- Booking knobs ---
BOOKING_CURRENCY = env.str("BOOKING_CURRENCY", default="EUR")
BOOKING_HOLD_SECONDS = env.int("BOOKING_HOLD_SECONDS", default=env.int("BOOKING_HOLD_MINUTES", default=15) * 60)
BOOKING_HOLD_CAP_SECONDS = env.int(
    "BOOKING_HOLD_CAP_SECONDS", default=env.int("BOOKING_HOLD_CAP_MINUTES", default=60) * 60
)
BOOKING_MAX_SEATS_PER_CART = env.int("BOOKING_MAX_SEATS_PER_CART", default=10)
BOOKING_PREVENT_ORPHAN_SEATS = env.bool("BOOKING_PREVENT_ORPHAN_SEATS", default=True)
# The what's-on page is kept this long per process and served to every viewer without a message
# (booking/web/page_cache.py): its seats-left figures are at most this old. 0: built for every request.
BOOKING_WHATS_ON_CACHE_SECONDS = env.float("BOOKING_WHATS_ON_CACHE_SECONDS", default=1.0)
# A performance's seat map version is kept this long per process to answer unchanged live maps
# with a 304 without reading it (booking/web/live_versions.py): a change reaches a polling viewer
# at most this much later. 0: read for every request.
BOOKING_LIVE_MAP_VERSION_SECONDS = env.float("BOOKING_LIVE_MAP_VERSION_SECONDS", default=0.5)
# A theater's VAT settings are kept this long per process for checkout (payments/settings.py):
# a change reaches the other processes' orders within it. 0: read for every order.
BOOKING_VAT_CACHE_SECONDS = env.float("BOOKING_VAT_CACHE_SECONDS", default=10.0)
# A box-office reservation's notice task is published by a thread of the web process after the
# answer (booking/core/publish.py; reconcile queues it again if it is lost). False: before the answer.
BOOKING_PUBLISH_AFTER_ANSWER = env.bool("BOOKING_PUBLISH_AFTER_ANSWER", default=True)
# Live seat maps pushed over Server-Sent Events from a change stream (booking/web/push.py); off: polling.
BOOKING_PUSH = env.bool("BOOKING_PUSH", default=True)
# A web worker freezes what is alive out of Python's full collections at least this often (sooner
# when no page is in flight; 0: off); booking/core/collector.py says why and when it collects them.
WEB_GC_FREEZE_SECONDS = env.float("WEB_GC_FREEZE_SECONDS", default=1.0)
# Anti-hoarding (docs/reliability.md). A client is an IP address (see BOOKING_TRUSTED_PROXIES).
BOOKING_MAX_LIVE_CARTS_PER_OWNER = env.int("BOOKING_MAX_LIVE_CARTS_PER_OWNER", default=2)
BOOKING_MAX_HELD_SEATS_PER_CLIENT = env.int("BOOKING_MAX_HELD_SEATS_PER_CLIENT", default=40)  # 0: no limit
# Unpaid box-office reservations at once, per buyer (cookie) and per client address; 0: no limit
BOOKING_MAX_OPEN_RESERVATIONS = env.int("BOOKING_MAX_OPEN_RESERVATIONS", default=2)
BOOKING_HOLD_RATE = env.str("BOOKING_HOLD_RATE", default="30/m")  # hold requests per buyer; "" turns it off
# ... and per client address, all its buyers together (a household, an office); "" turns it off
BOOKING_HOLD_RATE_PER_ADDRESS = env.str("BOOKING_HOLD_RATE_PER_ADDRESS", default="120/m")
# Booking lookups by reference + e-mail per client (Find my booking, the mail's link); "" turns it off
BOOKING_LOOKUP_RATE = env.str("BOOKING_LOOKUP_RATE", default="10/m")
# REST API calls per token (booking/api/auth.py); 429 with Retry-After beyond; "" turns it off
BOOKING_API_RATE = env.str("BOOKING_API_RATE", default="600/m")
# Box-office reservations (each mails its unverified address at once) per client address, and per
# e-mail address from anywhere; "" turns either off
BOOKING_RESERVATION_MAIL_RATE = env.str("BOOKING_RESERVATION_MAIL_RATE", default="10/d")
BOOKING_RESERVATION_MAIL_RATE_PER_EMAIL = env.str("BOOKING_RESERVATION_MAIL_RATE_PER_EMAIL", default="5/d")
# Sign-in links a client address may ask for, and links one e-mail address may be sent (any client).
BOOKING_SIGN_IN_RATE = env.str("BOOKING_SIGN_IN_RATE", default="10/h")
BOOKING_SIGN_IN_RATE_PER_EMAIL = env.str("BOOKING_SIGN_IN_RATE_PER_EMAIL", default="5/h")
# Members' presale access codes tried per client address (right or wrong); "" turns it off.
BOOKING_ACCESS_CODE_RATE = env.str("BOOKING_ACCESS_CODE_RATE", default="5/m")
BOOKING_PROMO_CODE_RATE = env.str("BOOKING_PROMO_CODE_RATE", default="10/m")  # promo codes tried per client
BOOKING_MAX_PER_TICKET_TYPE: dict[str, int] = {}  # optional: {ticket type code: at most N per order}
# Proxies in front of the app that append to X-Forwarded-For (0: the client is REMOTE_ADDR).
BOOKING_TRUSTED_PROXIES = env.int("BOOKING_TRUSTED_PROXIES", default=0)
# A hold younger than this is never touched by reconcile (its cart write may still be under way).
BOOKING_RECONCILE_GRACE_SECONDS = env.int("BOOKING_RECONCILE_GRACE_SECONDS", default=120)
# A checkout begun before payments (a cart in checking_out) this long ago is finished by reconcile.
BOOKING_CHECKOUT_STUCK_SECONDS = env.int("BOOKING_CHECKOUT_STUCK_SECONDS", default=120)
BOOKING_EXPIRE_EVERY_SECONDS = env.float("BOOKING_EXPIRE_EVERY_SECONDS", default=30)
BOOKING_RECONCILE_EVERY_SECONDS = env.float("BOOKING_RECONCILE_EVERY_SECONDS", default=300)
# The waiting list (booking/sales/waiting_list.py): how long seats offered to a waiting buyer stay
# held for them, and how often the worker offers seats that came back and passes on lapsed offers.
BOOKING_WAITING_LIST_OFFER_SECONDS = env.int("BOOKING_WAITING_LIST_OFFER_SECONDS", default=30 * 60)
BOOKING_WAITING_LIST_EVERY_SECONDS = env.float("BOOKING_WAITING_LIST_EVERY_SECONDS", default=30)
# The reports' summaries of sessions whose orders changed are recounted this often
# (booking/reports/summaries.py; a series report shows older counts "as of" until then).
BOOKING_REPORTS_REFRESH_EVERY_SECONDS = env.float("BOOKING_REPORTS_REFRESH_EVERY_SECONDS", default=60)
# Free wheelchair spaces become ordinary seats this long before the show (sales/wheelchair.py);
# the beat task looks every BOOKING_WHEELCHAIR_RELEASE_EVERY_SECONDS.
BOOKING_WHEELCHAIR_RELEASE_BEFORE = timedelta(hours=env.float("BOOKING_WHEELCHAIR_RELEASE_HOURS", default=24))
BOOKING_WHEELCHAIR_RELEASE_EVERY_SECONDS = env.float("BOOKING_WHEELCHAIR_RELEASE_EVERY_SECONDS", default=300)
# Time limits of the scheduled tasks (a soft limit raises inside the task; the hard one kills it).
BOOKING_EXPIRE_TIME_LIMIT_SECONDS = env.int("BOOKING_EXPIRE_TIME_LIMIT_SECONDS", default=120)
BOOKING_RECONCILE_TIME_LIMIT_SECONDS = env.int("BOOKING_RECONCILE_TIME_LIMIT_SECONDS", default=600)
# Confirmation e-mail: retries with exponential backoff (base, cap), then reconcile queues a mail
# still pending after BOOKING_MAIL_REQUEUE_SECONDS again, at most BOOKING_MAIL_MAX_REQUEUES times.
BOOKING_MAIL_RETRY_BASE_SECONDS = env.float("BOOKING_MAIL_RETRY_BASE_SECONDS", default=10)
BOOKING_MAIL_RETRY_MAX_SECONDS = env.float("BOOKING_MAIL_RETRY_MAX_SECONDS", default=600)
BOOKING_MAIL_REQUEUE_SECONDS = env.int("BOOKING_MAIL_REQUEUE_SECONDS", default=300)
BOOKING_MAIL_MAX_REQUEUES = env.int("BOOKING_MAIL_MAX_REQUEUES", default=5)
# A mail that failed that way is tried again by reconcile after BOOKING_MAIL_RETRY_FAILED_SECONDS,
# twice as long after each further failed round; after BOOKING_MAIL_MAX_FAILURES failed rounds (or
# an address refused for good) it stays failed for an operator (worker_status, resend_confirmation).
BOOKING_MAIL_RETRY_FAILED_SECONDS = env.int("BOOKING_MAIL_RETRY_FAILED_SECONDS", default=1800)
BOOKING_MAIL_MAX_FAILURES = env.int("BOOKING_MAIL_MAX_FAILURES", default=4)
# Retention (docs/architecture.md, "Data that does not grow"): an ended cart (expired, canceled,
# done) is deleted this many days after it ended (TTL on endedOn; changing it rebuilds the index at
# the next ensure_indexes); an order is kept this many full calendar years after the year it was
# made in (TTL on purgeAt, computed when the order is made: a change applies to new orders).
BOOKING_CART_RETENTION_DAYS = env.int("BOOKING_CART_RETENTION_DAYS", default=30)
BOOKING_ORDER_RETENTION_YEARS = env.int("BOOKING_ORDER_RETENTION_YEARS", default=10)
# A session that ended this many days ago loses its seat grid and holds for a small summary (the
# worker's compact_past_sessions, every BOOKING_COMPACT_EVERY_SECONDS); the layout stays.
BOOKING_SESSION_COMPACT_AFTER_DAYS = env.int("BOOKING_SESSION_COMPACT_AFTER_DAYS", default=7)
BOOKING_COMPACT_EVERY_SECONDS = env.float("BOOKING_COMPACT_EVERY_SECONDS", default=3600)

# --- Waiting room for big on-sales (booking/sales/waiting_room.py; docs/architecture.md) ---
# A waiting buyer not seen (no poll) for this long loses the place.
BOOKING_QUEUE_GRACE_SECONDS = env.int("BOOKING_QUEUE_GRACE_SECONDS", default=120)
# An admission lets the buyer choose seats for this long (holds need it; checkout does not).
BOOKING_QUEUE_ADMISSION_SECONDS = env.int("BOOKING_QUEUE_ADMISSION_SECONDS", default=1200)
# The queue page's place in line is pushed (Server-Sent Events, ASGI) at the pace a poll would have;
# off (or under WSGI) the page polls.
BOOKING_QUEUE_PUSH = env.bool("BOOKING_QUEUE_PUSH", default=True)
# The queue page is looked at again after this many seconds near the front, up to the max further back.
BOOKING_QUEUE_POLL_SECONDS = env.float("BOOKING_QUEUE_POLL_SECONDS", default=3)
BOOKING_QUEUE_POLL_MAX_SECONDS = env.float("BOOKING_QUEUE_POLL_MAX_SECONDS", default=20)
# How long a queue poll waits for Redis before the page says "paused, you keep your place".
BOOKING_QUEUE_REDIS_TIMEOUT_SECONDS = env.float("BOOKING_QUEUE_REDIS_TIMEOUT_SECONDS", default=0.5)
# Where the site is reached; the ticket link in the confirmation e-mail starts with it.
SITE_URL = env.str("SITE_URL", default="http://127.0.0.1:8000").rstrip("/")

# E-mail through Django 6.1's MAILERS, configured by one URL: consolemail:// (dev, the default),
# smtp+tls://user:password@host:587 (production), ...
_email = environ.Env.email_url_config(env.str("EMAIL_URL", default="consolemail://"))
_smtp_options = {
    "host": _email.get("EMAIL_HOST"),
    "port": _email.get("EMAIL_PORT"),
    "username": _email.get("EMAIL_HOST_USER"),
    "password": _email.get("EMAIL_HOST_PASSWORD"),
    "use_tls": _email.get("EMAIL_USE_TLS"),
    "use_ssl": _email.get("EMAIL_USE_SSL"),
    "timeout": 10,
}
MAILERS = {
    "default": {
        "BACKEND": _email["EMAIL_BACKEND"],
        "OPTIONS": {k: v for k, v in _smtp_options.items() if v is not None}
        if _email["EMAIL_BACKEND"].endswith("smtp.EmailBackend")
        else {},
    }
}
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="tickets@theater.example")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    # The worker and beat use this too (theater_site/celery.py). No root configuration, so pytest's
    # log capture keeps the root logger; each line is printed once.
    "loggers": {
        "booking": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
        "celery": {"handlers": ["console"], "level": "INFO"},
    },
}

# --- Wallet passes (booking/notifications/wallet_pass.py): the theater's Pass Type ID, team and
# PEM files (certificate, key, Apple's WWDR intermediate). Without a certificate, passes are signed
# by a development certificate made once under BOOKING_WALLET_DEV_DIR (git ignores .run/).
BOOKING_WALLET_PASS_TYPE_ID = env.str("BOOKING_WALLET_PASS_TYPE_ID", default="pass.local.theater.ticket")
BOOKING_WALLET_TEAM_ID = env.str("BOOKING_WALLET_TEAM_ID", default="DEVELOPMENT")
BOOKING_WALLET_ORGANIZATION = env.str("BOOKING_WALLET_ORGANIZATION", default="Theater")
BOOKING_WALLET_CERTIFICATE = env.str("BOOKING_WALLET_CERTIFICATE", default="")
BOOKING_WALLET_KEY = env.str("BOOKING_WALLET_KEY", default="")
BOOKING_WALLET_KEY_PASSWORD = env.str("BOOKING_WALLET_KEY_PASSWORD", default="")
BOOKING_WALLET_WWDR_CERTIFICATE = env.str("BOOKING_WALLET_WWDR_CERTIFICATE", default="")
BOOKING_WALLET_DEV_DIR = env.str("BOOKING_WALLET_DEV_DIR", default=str(BASE_DIR / ".run" / "wallet"))

# The beat schedule lives here, where a reader looks for it. Tasks are in booking/upkeep/tasks.py.
# A run nobody picked up before the next one is due is dropped (expires): the next run catches up.
CELERY_BEAT_SCHEDULE = {
    "expire-stale-carts": {
        "task": "booking.tasks.expire_stale_carts",
        "schedule": BOOKING_EXPIRE_EVERY_SECONDS,
        "options": {
            "expires": BOOKING_EXPIRE_EVERY_SECONDS,
            "time_limit": BOOKING_EXPIRE_TIME_LIMIT_SECONDS,
            "soft_time_limit": BOOKING_EXPIRE_TIME_LIMIT_SECONDS * 0.9,
        },
    },
    "compact-past-sessions": {
        "task": "booking.tasks.compact_past_sessions",
        "schedule": BOOKING_COMPACT_EVERY_SECONDS,
        "options": {"expires": BOOKING_COMPACT_EVERY_SECONDS, "time_limit": 600, "soft_time_limit": 540},
    },
    "release-wheelchair-spaces": {
        "task": "booking.tasks.release_wheelchair_spaces",
        "schedule": BOOKING_WHEELCHAIR_RELEASE_EVERY_SECONDS,
        "options": {"expires": BOOKING_WHEELCHAIR_RELEASE_EVERY_SECONDS, "time_limit": 120, "soft_time_limit": 108},
    },
    "refresh-report-summaries": {
        "task": "booking.tasks.refresh_report_summaries",
        "schedule": BOOKING_REPORTS_REFRESH_EVERY_SECONDS,
        "options": {"expires": BOOKING_REPORTS_REFRESH_EVERY_SECONDS, "time_limit": 300, "soft_time_limit": 270},
    },
    "waiting-list-offers": {
        "task": "booking.tasks.offer_waiting_list_seats",
        "schedule": BOOKING_WAITING_LIST_EVERY_SECONDS,
        "options": {"expires": BOOKING_WAITING_LIST_EVERY_SECONDS, "time_limit": 120, "soft_time_limit": 108},
    },
    "keep-takings-days": {  # booking/reports/takings.py: a past day counted once, off the page
        "task": "booking.tasks.keep_takings_days",
        "schedule": 3600,
        "options": {"expires": 3600, "time_limit": 600, "soft_time_limit": 540},
    },
    "subscription-renewals": {  # booking/sales/subscriptions.py: reserve, mail, end the window
        "task": "booking.tasks.subscription_renewals",
        "schedule": 60,
        "options": {"expires": 60, "time_limit": 300, "soft_time_limit": 270},
    },
    "reconcile-holds": {
        "task": "booking.tasks.reconcile",
        "schedule": BOOKING_RECONCILE_EVERY_SECONDS,
        "options": {
            "expires": BOOKING_RECONCILE_EVERY_SECONDS,
            "time_limit": BOOKING_RECONCILE_TIME_LIMIT_SECONDS,
            "soft_time_limit": BOOKING_RECONCILE_TIME_LIMIT_SECONDS * 0.9,
        },
    },
}

# --- Webhooks (booking/webhooks/; docs/api.md, "Webhooks") ---
# A delivery's timeout, its tries per round (network errors, 5xx, 408, 429 are tried again) and
# the backoff between them (doubling from the base, capped, with jitter); deliveries are kept for
# BOOKING_WEBHOOK_RETENTION_DAYS. BOOKING_WEBHOOK_ALLOW_LOCAL allows http and local or private hosts
# (development; never in production: the worker would call into the theater's own network).
BOOKING_WEBHOOK_TIMEOUT_SECONDS = env.float("BOOKING_WEBHOOK_TIMEOUT_SECONDS", default=5.0)
BOOKING_WEBHOOK_MAX_ATTEMPTS = env.int("BOOKING_WEBHOOK_MAX_ATTEMPTS", default=6)
BOOKING_WEBHOOK_RETRY_BASE_SECONDS = env.float("BOOKING_WEBHOOK_RETRY_BASE_SECONDS", default=30.0)
BOOKING_WEBHOOK_RETRY_MAX_SECONDS = env.float("BOOKING_WEBHOOK_RETRY_MAX_SECONDS", default=3600.0)
BOOKING_WEBHOOK_RETENTION_DAYS = env.int("BOOKING_WEBHOOK_RETENTION_DAYS", default=30)
BOOKING_WEBHOOK_ENDPOINTS_PER_THEATER = env.int("BOOKING_WEBHOOK_ENDPOINTS_PER_THEATER", default=20)
BOOKING_WEBHOOK_ALLOW_LOCAL = env.bool("BOOKING_WEBHOOK_ALLOW_LOCAL", default=DEBUG)

# --- Payments (booking/payments/, docs/architecture.md "Payments") ---
# Stripe: the official library with PaymentIntents. Without STRIPE_SECRET_KEY card payment is off
# (development runs localstripe, a fake Stripe server, and points these at it: scripts/run.sh).
STRIPE_SECRET_KEY = env.str("STRIPE_SECRET_KEY", default="")
STRIPE_PUBLISHABLE_KEY = env.str("STRIPE_PUBLISHABLE_KEY", default="")
STRIPE_WEBHOOK_SECRET = env.str("STRIPE_WEBHOOK_SECRET", default="")
STRIPE_API_BASE = env.str("STRIPE_API_BASE", default="https://api.stripe.com").rstrip("/")
STRIPE_JS_URL = env.str("STRIPE_JS_URL", default="https://js.stripe.com/v3/")
STRIPE_TIMEOUT_SECONDS = env.float("STRIPE_TIMEOUT_SECONDS", default=20)
# Starting payment extends the cart's hold once to this window, never past the payment cap
# (counted from the cart's first hold).
BOOKING_PAYMENT_WINDOW_SECONDS = env.int("BOOKING_PAYMENT_WINDOW_SECONDS", default=600)
BOOKING_PAYMENT_CAP_SECONDS = env.int("BOOKING_PAYMENT_CAP_SECONDS", default=BOOKING_HOLD_CAP_SECONDS + 600)
# A payment still open this long after its window ended is canceled at the provider by reconcile
# (until then a late payment is still taken: seats bought if free, else refunded).
BOOKING_PAYMENT_LATE_SECONDS = env.int("BOOKING_PAYMENT_LATE_SECONDS", default=1800)
# Reconcile asks the provider about a pending payment this long after its window ended.
BOOKING_PAYMENT_CHECK_GRACE_SECONDS = env.int("BOOKING_PAYMENT_CHECK_GRACE_SECONDS", default=60)
# Gift vouchers (booking/payments/vouchers.py): valid this many years; counted from the end of the
# year of sale (German law, BGB §195/§199), or from the day of sale with END_OF_YEAR=false.
BOOKING_VOUCHER_VALIDITY_YEARS = env.int("BOOKING_VOUCHER_VALIDITY_YEARS", default=3)
BOOKING_VOUCHER_END_OF_YEAR = env.bool("BOOKING_VOUCHER_END_OF_YEAR", default=True)
BOOKING_VOUCHER_MIN_VALUE = env.int("BOOKING_VOUCHER_MIN_VALUE", default=500)  # cents
BOOKING_VOUCHER_MAX_VALUE = env.int("BOOKING_VOUCHER_MAX_VALUE", default=50_000)  # cents
BOOKING_DONATION_MAX_VALUE = env.int("BOOKING_DONATION_MAX_VALUE", default=50_000)  # cents, per order
# VAT in percent (prices include it). Ticket rate per theater overrides the default (staff).
BOOKING_VAT_RATE = env.str("BOOKING_VAT_RATE", default="7")
# Reports (booking/reports/): when a session's orders are counted (reports/tally.py), group them
# in MongoDB ($group pipelines: only the grouped rows travel; the default) or in the app from one
# indexed find (False)
BOOKING_REPORTS_GROUP_ON_SERVER = env.bool("BOOKING_REPORTS_GROUP_ON_SERVER", default=True)
# Where the report pages take the sales figures from: "summaries" (per-session counts, stored and
# recounted when the session's orders change: reports/summaries.py) or "orders" (counted at every
# read: exact, and slow for a long series; a fallback)
BOOKING_REPORTS_SOURCE = env.str("BOOKING_REPORTS_SOURCE", default="summaries")
# Sessions changed since their last count that a series report recounts itself (the rest are
# shown "as of" their count until the worker's next round); a session report always recounts.
BOOKING_REPORTS_RECOUNT_ON_READ = env.int("BOOKING_REPORTS_RECOUNT_ON_READ", default=10)
BOOKING_FEE = env.int("BOOKING_FEE", default=0)  # per order, minor units, VAT included; 0: none
BOOKING_FEE_VAT_RATE = env.str("BOOKING_FEE_VAT_RATE", default="19")
# Pay at the box office (per session, off unless staff turn it on): unpaid seats go back this
# many minutes before the show unless the session says otherwise.
BOOKING_BOX_OFFICE_DEADLINE_MINUTES = env.int("BOOKING_BOX_OFFICE_DEADLINE_MINUTES", default=30)
# Staff selling at the counter (sales/counter.py): their holds last while they work and end
# this long after their last action, so a forgotten counter screen never blocks seats.
BOOKING_STAFF_HOLD_IDLE_SECONDS = env.int("BOOKING_STAFF_HOLD_IDLE_SECONDS", default=20 * 60)
# The box office sells until the performance starts, plus this many seconds (latecomers at the
# counter); the online sale window and waiting room never apply to it (sales/holds.BOX_OFFICE).
BOOKING_COUNTER_SALE_AFTER_START_SECONDS = env.int("BOOKING_COUNTER_SALE_AFTER_START_SECONDS", default=0)
# A refund the provider refused or could not be reached for is retried after this, doubling.
BOOKING_REFUND_RETRY_SECONDS = env.int("BOOKING_REFUND_RETRY_SECONDS", default=300)
# A dearer exchange the customer pays online keeps its new seats this long (at most to an hour before the show).
BOOKING_EXCHANGE_PAYMENT_SECONDS = env.int("BOOKING_EXCHANGE_PAYMENT_SECONDS", default=2 * 86400)
BOOKING_REFUND_MAX_TRIES = env.int("BOOKING_REFUND_MAX_TRIES", default=8)
# The seller printed on receipts.
BOOKING_SELLER = env.str("BOOKING_SELLER", default="Stadttheater GmbH, Theaterplatz 1, 10115 Berlin")
BOOKING_SELLER_VAT_ID = env.str("BOOKING_SELLER_VAT_ID", default="DE000000000")
# An invoice from the counter is due this many days after the sale unless staff give a date (at
# the latest on the performance's day: its seats stay reserved until then).
BOOKING_INVOICE_DUE_DAYS = env.int("BOOKING_INVOICE_DUE_DAYS", default=14)
# Stripe.js comes from Stripe's address (its own rule) and talks to Stripe's API: the pages that
# load it (checkout, a booking waiting for its card payment) add those origins to the policy above
# for themselves (booking/presale/context.py: stripe_csp); every other page keeps 'self' only.
