"""Money: integer minor units, prices that include VAT, and the VAT shown on receipts.

Rates are percent strings ("7", "19", "7.7") kept as ``Decimal``; amounts are ints (cents).
Rounding rule (the usual one for receipts from gross prices): per rate, add up the gross amounts
of every line at that rate, take net = gross * 100 / (100 + rate) rounded half up to the cent, and
VAT = gross - net. So net + VAT is exactly the gross paid, and lines are never rounded one by one.

Rates: a seat category's rate is the theater's setting for that category (``vatRates`` on the
theater: {"p": "7"}), else the theater's ticket rate (``vatRate``), else BOOKING_VAT_RATE. The
optional per-order booking fee (BOOKING_FEE) has its own rate (BOOKING_FEE_VAT_RATE).
"""

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from babel import numbers
from django.conf import settings
from django.utils import translation

from booking.core.domain import Order


def rate(value) -> Decimal:
    """A VAT rate in percent from a setting or a document; refuses nonsense."""
    try:
        found = Decimal(str(value).strip().rstrip("%"))
    except (InvalidOperation, ValueError):
        raise ValueError(f"not a VAT rate: {value!r}") from None
    if not found.is_finite() or found < 0 or found >= 100:
        raise ValueError(f"not a VAT rate: {value!r}")
    return found.normalize() if found != found.to_integral() else found.quantize(Decimal(1))


def rate_text(value) -> str:
    return format(rate(value), "f")


def net_of(gross: int, vat_rate) -> int:
    """Net of a gross amount at a rate, rounded half up to the minor unit."""
    r = rate(vat_rate)
    net = (Decimal(gross) * 100 / (100 + r)).quantize(Decimal(1), rounding=ROUND_HALF_UP)
    return int(net)


@dataclass(frozen=True)
class VatLine:
    rate: str  # percent, as text
    net: int
    vat: int
    gross: int

    def as_doc(self) -> dict:
        return {"rate": self.rate, "net": self.net, "vat": self.vat, "gross": self.gross}


def breakdown(amounts) -> list[VatLine]:
    """``amounts``: (gross, rate) pairs -> one line per rate, lowest rate first."""
    totals: dict[Decimal, int] = {}
    for gross, vat_rate in amounts:
        key = rate(vat_rate)
        totals[key] = totals.get(key, 0) + int(gross)
    lines = []
    for key in sorted(totals):
        gross = totals[key]
        net = net_of(gross, key)
        lines.append(VatLine(rate=format(key, "f"), net=net, vat=gross - net, gross=gross))
    return lines


def ticket_rate(theater: Mapping[str, Any] | None, category: str) -> str:
    """``theater``: its ``vatRate`` and ``vatRates`` are enough (``settings.theater_vat_settings``)."""
    theater = theater or {}
    per_category = theater.get("vatRates") or {}
    return rate_text(per_category.get(category) or theater.get("vatRate") or settings.BOOKING_VAT_RATE)


def booking_fee() -> tuple[int, str]:
    """(fee per order in minor units, its VAT rate); (0, rate) when there is none."""
    return max(0, int(settings.BOOKING_FEE)), rate_text(settings.BOOKING_FEE_VAT_RATE)


def line_amount(line: Mapping[str, Any]) -> int:
    """What a ticket costs the buyer: its locked price less its share of a promo code."""
    return int(line["price"]) - int(line.get("discount", 0))


def voucher_part(order: Mapping[str, Any]) -> int:
    """What the order's gift voucher pays (payments/vouchers.py)."""
    return (order.get("voucher") or {}).get("amount", 0)


def amount_due(order: Mapping[str, Any]) -> int:
    """What the card, the box office or the counter is asked for: the total less the voucher."""
    return int(order["total"]) - voucher_part(order)


def order_breakdown(order: Order) -> list[VatLine]:
    """VAT of what the order still charges: its lines (not refunded) and the fee."""
    pairs = [(line_amount(line), line.get("vat", settings.BOOKING_VAT_RATE)) for line in order.get("lines", [])]
    fee = order.get("fee")
    if fee and fee["amount"]:
        pairs.append((fee["amount"], fee["vat"]))
    return breakdown(pairs)


def format_money(minor_units: int, currency: str = "") -> str:
    """Receipts' amounts: "1,234.50 EUR" in English, "1.234,50 EUR" in German (the active language)."""
    text = numbers.format_decimal(
        Decimal(int(minor_units)) / 100,
        format="#,##0.00",
        locale=translation.to_locale(translation.get_language() or "en"),
    )
    return f"{text} {currency}".strip()
