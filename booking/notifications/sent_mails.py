"""Every mail sent about an order, kept on the order with its text, for the staff's order page.

Written right after the mail server took the mail, as a capped ``$push`` (the newest
``KEPT_MAILS``): it goes with the order (no collection of its own to purge). A failure to keep it
is logged and does not make the send count as failed: that would send the mail again.
"""

import logging

from django.core.mail import EmailMultiAlternatives
from pymongo.errors import PyMongoError

from booking.core import clock, mongo
from booking.core.domain import Order, SentMail

log = logging.getLogger("booking.mail")
KEPT_MAILS = 30
BODY_MAX = 20_000  # characters of a mail's plain text kept


def send_and_keep(order: Order, message: EmailMultiAlternatives, kind: str) -> None:
    """Send the mail (its errors are the caller's), then keep it on the order."""
    message.send()
    record: SentMail = {
        "at": clock.now(),
        "kind": kind,
        "to": list(message.to),
        "subject": str(message.subject),
        "body": str(message.body)[:BODY_MAX],
    }
    try:
        mongo.orders().update_one(
            {"_id": order["_id"], "ref": order["ref"]},
            {"$push": {"sentMails": {"$each": [record], "$slice": -KEPT_MAILS}}},
        )
    except PyMongoError as exc:
        log.warning("mail %s of order %s sent but not kept: %s", kind, order.get("ref"), exc)
