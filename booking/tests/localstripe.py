"""A real localstripe (a stateful fake Stripe server, PyPI ``localstripe``) for the whole test run,
and helpers that do what a buyer's browser does with Stripe.js. Loaded by the root conftest.

The app talks to it through the official ``stripe`` library exactly as it would to Stripe: only
STRIPE_API_BASE differs. localstripe keeps its objects in memory (``--from-scratch``: nothing from
an earlier run). Its own quirks, which the tests respect: it declines the cards in its
``PaymentMethod._charging_is_declined`` (4000000000000341) when charged, asks 3-D Secure for
4000002760003184 and friends, and sends webhooks only to URLs registered at
``/_config/webhooks/<id>`` (one second after the event). It ignores idempotency keys by itself:
the tests run it through ``scripts/localstripe_server.py``, which answers a repeated key as Stripe
does (the first answer again) and lists the POSTs it received (``requests_received``).
"""

import importlib.util
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings

from booking.tests.ports import free_port, listening

VISA = "4242424242424242"
DECLINED = "4000000000000341"  # localstripe: attaching works, charging is declined
THREE_D_SECURE = "4000002760003184"  # localstripe: the charge needs authentication first
SECRET_KEY = "sk_test_localstripe"
PUBLISHABLE_KEY = "pk_test_localstripe"
WEBHOOK_SECRET = "whsec_test_localstripe"


SERVER = Path(__file__).resolve().parents[2] / "scripts" / "localstripe_server.py"


def _command(port: int) -> list[str]:
    """localstripe with Stripe's idempotency keys (scripts/localstripe_server.py)."""
    if importlib.util.find_spec("localstripe") is None:
        pytest.exit("localstripe is not installed (pip install -r requirements-dev.txt)", 2)
    return [sys.executable, str(SERVER), "--port", str(port), "--from-scratch"]


def stripe_settings(base: str) -> dict:
    return {
        "STRIPE_SECRET_KEY": SECRET_KEY,
        "STRIPE_PUBLISHABLE_KEY": PUBLISHABLE_KEY,
        "STRIPE_WEBHOOK_SECRET": WEBHOOK_SECRET,
        "STRIPE_API_BASE": base,
        "STRIPE_JS_URL": f"{base}/js.stripe.com/v3/",
    }


@pytest.fixture(scope="session", autouse=True)
def localstripe_url():
    """Start localstripe on a free port and point the app (and its subprocesses) at it."""
    port = free_port()
    log = open(os.path.join(os.environ.get("TMPDIR", "/tmp"), f"localstripe-test-{port}.log"), "wb")  # noqa: SIM115
    proc = subprocess.Popen(_command(port), stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    if not listening(port, proc, 20):
        pytest.exit(f"localstripe did not start (see {log.name})", 2)
    values = stripe_settings(base)
    os.environ.update(values)
    for name, value in values.items():
        setattr(settings, name, value)
    yield base
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


# --- what the buyer's browser does (Stripe.js) ---


def card(number: str = VISA) -> str:
    """A payment method for a test card, as Stripe.js makes one in the buyer's browser (it uses the
    publishable key; localstripe lets that key make only tokens, so here the secret key does)."""
    from booking.payments.stripe_provider import client

    made = client().v1.payment_methods.create(
        {"type": "card", "card": {"number": number, "exp_month": 12, "exp_year": 2034, "cvc": "123"}}
    )
    return made.id


def authenticate(payment_id: str, client_secret: str, success: bool = True) -> dict:
    """Finish 3-D Secure the way localstripe's Stripe.js does (its modal's two buttons)."""
    url = f"{settings.STRIPE_API_BASE}/v1/payment_intents/{payment_id}/_authenticate?success={str(success).lower()}"
    body = json.dumps({"key": PUBLISHABLE_KEY, "client_secret": client_secret}).encode()
    with urllib.request.urlopen(urllib.request.Request(url, body, method="POST"), timeout=10) as answer:  # noqa: S310
        return json.loads(answer.read())


def configure(what: str, settings_body: dict) -> None:
    """POST ``settings_body`` to localstripe's ``/_config/<what>`` (its own and our wrapper's knobs)."""
    body = json.dumps(settings_body).encode()
    request = urllib.request.Request(f"{settings.STRIPE_API_BASE}/_config/{what}", body, method="POST")
    with urllib.request.urlopen(request, timeout=10):  # noqa: S310
        pass


def register_webhook(url: str, name: str = "tests", events: list[str] | None = None) -> None:
    """Have localstripe send its events (all, or these types) to ``url``, signed with the test
    webhook secret. It cannot forget one: register the name again with ``events=[]``."""
    configure(f"webhooks/{name}", {"url": url, "secret": WEBHOOK_SECRET, "events": events})


def events_for(payment_id: str) -> list[dict]:
    """The events localstripe made for one payment, oldest first, as it would send them."""
    from booking.payments.stripe_provider import client

    found = [e.to_dict() for e in client().v1.events.list({"limit": 100000}).data]
    mine = [e for e in found if (e.get("data") or {}).get("object", {}).get("id") == payment_id]
    return sorted(mine, key=lambda e: e["created"])


def signed(event: dict, secret: str = WEBHOOK_SECRET, timestamp: int | None = None) -> tuple[bytes, str]:
    """The body and Stripe-Signature header Stripe (and localstripe) send with an event."""
    import hashlib
    import hmac

    payload = json.dumps(event, indent=2, sort_keys=True).encode()
    t = int(time.time()) if timestamp is None else timestamp
    signature = hmac.new(secret.encode(), b"%d.%s" % (t, payload), hashlib.sha256).hexdigest()
    return payload, f"t={t},v1={signature}"


def requests_received(base: str | None = None) -> list[dict]:
    """Every POST localstripe received under /v1/, oldest first: {path, key (its Idempotency-Key
    header, or None), replayed (answered with the first answer to that key)}."""
    with urllib.request.urlopen(f"{base or settings.STRIPE_API_BASE}/_config/requests", timeout=10) as answer:  # noqa: S310
        return json.loads(answer.read())
