"""Donations at checkout: what a theater offers (suggested amounts, a free amount, an appeal in
both languages) and the one check of what a buyer chose.

A donation is money given, not a sale: it carries no VAT, it is charged with the order (the card,
a voucher, the box office) and kept on the order as ``donation: {"amount": cents}``; its total
includes it. It goes back with the order's last ticket (a whole refund or cancel), never with a
part of the tickets: the buyer gave it to the theater, not for those seats. Amounts are cents,
from DONATION_MIN to BOOKING_DONATION_MAX_VALUE.
"""

import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from bson import ObjectId
from django.conf import settings
from django.utils.translation import gettext

from booking.core import mongo
from booking.core.errors import InvalidRequest, NotFound
from booking.payments import settings as payment_settings
from booking.payments.money import format_money

DONATION_MIN = 100  # one euro: less costs the theater more in card fees than it brings
MAX_SUGGESTED = 4  # buttons on a phone's checkout
APPEAL_LENGTH = 300
# What a buyer may type: digits, a decimal comma or point, at most two decimals
AMOUNT_TEXT = re.compile(r"^\d{1,6}(?:[.,]\d{1,2})?$", re.ASCII)


def most() -> int:
    return int(settings.BOOKING_DONATION_MAX_VALUE)


def limits_message() -> str:
    currency = settings.BOOKING_CURRENCY
    return gettext("A donation is from %(low)s to %(high)s.") % {
        "low": format_money(DONATION_MIN, currency),
        "high": format_money(most(), currency),
    }


def offer_of(theater: Mapping[str, Any] | None) -> dict | None:
    """The theater's donation offer, or None when it asks for none."""
    offer = (theater or {}).get("donations") or {}
    if not offer.get("enabled") or not (offer.get("suggested") or offer.get("free")):
        return None
    return offer


def parse_amount(text: Any) -> int:
    """Cents from what a buyer or staff typed ("5", "5,50", "12.5"); "" is 0 (no donation)."""
    typed = str(text if text is not None else "").strip()
    if typed in ("", "0"):
        return 0
    if len(typed) > 12 or not AMOUNT_TEXT.match(typed):
        message = gettext("Please give the donation as an amount, e.g. 5 or 7.50.")
        raise InvalidRequest(message, fields={"donation": message})
    try:
        cents = Decimal(typed.replace(",", ".")) * 100
    except InvalidOperation:  # the pattern lets no such text through; kept as the last word
        message = gettext("Please give the donation as an amount, e.g. 5 or 7.50.")
        raise InvalidRequest(message, fields={"donation": message}) from None
    return int(cents)


def amount_text(cents: int) -> str:
    """An amount as a form sends it back to parse_amount: "5", "7.50"."""
    return f"{cents // 100}" if cents % 100 == 0 else f"{cents // 100}.{cents % 100:02d}"


def chosen(text: Any, offer: Mapping[str, Any] | None) -> int:
    """The donation a buyer chose, in cents (0: none), checked against the theater's offer:
    a suggested amount, or any amount in the limits when the offer allows a free one."""
    amount = parse_amount(text)
    if amount == 0:
        return 0
    if offer is None:
        message = gettext("This theater does not take donations online.")
        raise InvalidRequest(message, fields={"donation": message})
    if not DONATION_MIN <= amount <= most():
        message = limits_message()
        raise InvalidRequest(message, fields={"donation": message})
    if not offer.get("free") and amount not in offer.get("suggested", []):
        message = gettext("Please choose one of the suggested amounts.")
        raise InvalidRequest(message, fields={"donation": message})
    return amount


def set_offer(
    theater_id: ObjectId, *, enabled: bool, suggested: list[int], free: bool, appeal: str, appeal_de: str
) -> dict:
    """The theater's donation offer; orders already made keep their donation."""
    amounts = sorted(set(suggested))
    if len(amounts) > MAX_SUGGESTED:
        message = gettext("At most %(count)d suggested amounts.") % {"count": MAX_SUGGESTED}
        raise InvalidRequest(message, fields={"suggested": message})
    if any(isinstance(a, bool) or not isinstance(a, int) or not DONATION_MIN <= a <= most() for a in amounts):
        raise InvalidRequest(limits_message(), fields={"suggested": limits_message()})
    if enabled and not amounts and not free:
        message = gettext("Suggest at least one amount or allow a free amount.")
        raise InvalidRequest(message, fields={"suggested": message})
    texts = [str(appeal or "").strip(), str(appeal_de or "").strip()]
    if any(len(t) > APPEAL_LENGTH for t in texts):
        message = gettext("Please use at most %(count)d characters for the appeal.") % {"count": APPEAL_LENGTH}
        raise InvalidRequest(message, fields={"appeal": message})
    offer = {"enabled": bool(enabled), "suggested": amounts, "free": bool(free), "appeal": texts[0]}
    if texts[1]:
        offer["appealDe"] = texts[1]
    done = mongo.theaters().update_one({"_id": theater_id}, {"$set": {"donations": offer}})
    payment_settings.forget_theater(theater_id)
    if not done.matched_count:
        raise NotFound(gettext("No such theater."))
    return offer


def amount_of(order: Mapping[str, Any]) -> int:
    """What the order's buyer donated (0: nothing)."""
    return int((order.get("donation") or {}).get("amount", 0))
