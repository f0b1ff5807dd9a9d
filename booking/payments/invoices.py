"""Invoices: a counter sale "on invoice" to a buyer with a billing address gets an invoice with a
number of its own (one gap-free series per theater, ``invoice:<theaterId>`` in
``payments/number_series.py``), the theater's seller data as it was at the sale (name, address,
VAT id, tax number: staff keep them with the VAT rates), every line's VAT rate and a due date.

The order is stored with ``invoice: {seller, buyer, due}`` and its mail notice in the one insert
(sales/counter.py), then numbered (``invoiceNo``, ``invoiceTheater``, ``invoiceOn``). A crash
between the two leaves an order with its notice and no number: whoever comes next numbers it
(the mail's sender calls :func:`assign` before writing the mail, reconcile finishes the series'
log), so the number never skips and the mail never goes without it.

The invoice is paid later: staff record the money with how it came and a reference
(``payments.flow.mark_paid_at_counter``); a refund or a canceled, lapsed invoice gets a credit
note (payments/credit_notes.py).
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

from bson import ObjectId
from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext

from booking.core import mongo
from booking.core.domain import BillingAddress, Invoice
from booking.core.errors import InvalidRequest, NotFound
from booking.payments import number_series, receipts

COMPANY_MAX = 200
ADDRESS_MAX = 400
ADDRESS_LINES_MAX = 6
# an EU VAT id: the country code, then 2 to 13 letters and digits, at least one a digit
VAT_ID_RE = re.compile(r"^[A-Z]{2}(?=[A-Z0-9+*]*[0-9])[A-Z0-9+*]{2,13}$")
TAX_NUMBER_MAX = 30
SELLER_NAME_MAX = 200
BANK_MAX = 200


def series_of(theater_id: ObjectId) -> str:
    return f"invoice:{theater_id}"


def invoice_label(order: Mapping[str, Any]) -> str:
    """The number as printed: INV-000042 (one series per theater, never reset)."""
    number = order.get("invoiceNo")
    return f"INV-{number:06d}" if number else ""


# --- the seller: the theater's data, kept by staff ---


@dataclass(frozen=True)
class Seller:
    name: str
    address: str
    vat_id: str
    tax_number: str = ""
    bank: str = ""  # how to pay an invoice: the account, printed under the amount due

    def as_document(self) -> dict:
        return {
            "name": self.name,
            "address": self.address,
            "vatId": self.vat_id,
            "taxNumber": self.tax_number,
            "bank": self.bank,
        }


def default_seller() -> Seller:
    """BOOKING_SELLER ("name, street, town") and BOOKING_SELLER_VAT_ID, for a theater without its own."""
    name, _, address = settings.BOOKING_SELLER.partition(",")
    lines = "\n".join(part.strip() for part in address.split(",") if part.strip())
    return Seller(name=name.strip(), address=lines, vat_id=settings.BOOKING_SELLER_VAT_ID)


def seller_of(theater: dict | None) -> Seller:
    kept = (theater or {}).get("seller") or {}
    if not kept.get("name"):
        return default_seller()
    return Seller(
        kept["name"], kept.get("address", ""), kept.get("vatId", ""), kept.get("taxNumber", ""), kept.get("bank", "")
    )


def clean_address(raw: str, *, field: str, errors: dict) -> str:
    """Lines of an address as typed: each trimmed, empty ones dropped, within the limits."""
    lines = [" ".join(line.split()) for line in str(raw or "").splitlines()]
    lines = [line for line in lines if line]
    text = "\n".join(lines)
    if len(text) > ADDRESS_MAX or len(lines) > ADDRESS_LINES_MAX:
        errors[field] = gettext("Please give the address in at most %(lines)d lines and %(chars)d characters.") % {
            "lines": ADDRESS_LINES_MAX,
            "chars": ADDRESS_MAX,
        }
    return text


def clean_vat_id(raw: str, *, field: str, errors: dict) -> str:
    value = re.sub(r"[\s-]", "", str(raw or "")).upper()
    if value and not VAT_ID_RE.match(value):
        errors[field] = gettext("Please give a VAT ID as the country code and number, e.g. DE123456789.")
    return value


def set_seller(
    theater_id: ObjectId, *, name: str, address: str, vat_id: str, tax_number: str = "", bank: str = ""
) -> Seller:
    """The theater's seller data for invoices and credit notes from now on (those issued keep theirs)."""
    errors: dict[str, str] = {}
    name = " ".join(str(name or "").split())
    if not name:
        errors["seller_name"] = gettext("Please give the seller's legal name.")
    elif len(name) > SELLER_NAME_MAX:
        errors["seller_name"] = gettext("Please use at most %(max)d characters.") % {"max": SELLER_NAME_MAX}
    address = clean_address(address, field="seller_address", errors=errors)
    if not address and "seller_address" not in errors:
        errors["seller_address"] = gettext("Please give the seller's address.")
    vat_id = clean_vat_id(vat_id, field="vat_id", errors=errors)
    tax_number = " ".join(str(tax_number or "").split())
    if len(tax_number) > TAX_NUMBER_MAX:
        errors["tax_number"] = gettext("Please use at most %(max)d characters.") % {"max": TAX_NUMBER_MAX}
    if not vat_id and not tax_number and "vat_id" not in errors:
        errors["vat_id"] = gettext("An invoice needs the VAT ID or the tax number.")
    bank = " ".join(str(bank or "").split())
    if len(bank) > BANK_MAX:
        errors["bank"] = gettext("Please use at most %(max)d characters.") % {"max": BANK_MAX}
    if errors:
        raise InvalidRequest(" ".join(errors.values()), fields=errors)
    seller = Seller(name, address, vat_id, tax_number, bank)
    done = mongo.theaters().update_one({"_id": theater_id}, {"$set": {"seller": seller.as_document()}})
    if not done.matched_count:
        raise NotFound(gettext("No such theater."))
    return seller


# --- the buyer and the due date, as staff type them at the counter ---


@dataclass(frozen=True)
class Billing:
    company: str = ""
    address: str = ""
    vat_id: str = ""

    def as_document(self) -> BillingAddress:
        return {"company": self.company, "address": self.address, "vatId": self.vat_id}


def clean_billing(billing: "Billing | None", errors: dict) -> "Billing | None":
    """The buyer's billing data (None: no invoice document, a reservation paid later). A company
    or VAT id without an address is refused: an invoice needs the address."""
    if billing is None:
        return None
    company = " ".join(str(billing.company or "").split())
    if len(company) > COMPANY_MAX:
        errors["company"] = gettext("Please use at most %(max)d characters.") % {"max": COMPANY_MAX}
    address = clean_address(billing.address, field="billing_address", errors=errors)
    vat_id = clean_vat_id(billing.vat_id, field="buyer_vat_id", errors=errors)
    if not address:
        if company or vat_id:
            errors["billing_address"] = gettext("An invoice needs the billing address.")
        return None
    return Billing(company, address, vat_id)


def default_due(today: date) -> date:
    return today + timedelta(days=settings.BOOKING_INVOICE_DUE_DAYS)


def due_day(until: datetime) -> date:
    """The last day to pay, from the end of the reservation (the next midnight, or the start)."""
    return timezone.localtime(until - timedelta(microseconds=1)).date()


def end_of(day: date) -> datetime:
    return datetime.combine(day + timedelta(days=1), time.min, tzinfo=timezone.get_current_timezone())


def document(*, seller: Seller, billing: Billing, due: date) -> Invoice:
    """What the order keeps of its invoice from the sale on (the seller's data may change later)."""
    return {"seller": seller.as_document(), "buyer": billing.as_document(), "due": due.isoformat()}


# --- the number ---


def assign(order_id: ObjectId, *, ref: str) -> int | None:
    """The order's invoice number, given now if it has none (safe to repeat, from anywhere);
    None for an order without an invoice."""
    order = mongo.orders().find_one({"_id": order_id, "ref": ref}, {"invoiceNo": 1, "invoice": 1, "sessions": 1})
    if order is None:
        raise LookupError(f"no order {order_id}")
    if order.get("invoiceNo") or not order.get("invoice"):
        return order.get("invoiceNo")
    theater_id = receipts.theater_of(order)
    if theater_id is None:
        raise LookupError(f"order {order_id} has no performance, so no theater to number it")
    return number_series.take(
        series=series_of(theater_id),
        owner=order_id,
        key={"ref": ref},
        target=number_series.Target(
            collection="orders", field="invoiceNo", set={"invoiceTheater": theater_id}, stamp="invoiceOn"
        ),
    )


def assign_missing(limit: int = 200) -> int:
    """Reconcile: invoices a crash left without their number (after the order's insert). Invoices
    are few: the sparse index on their due date lists them all."""
    query = {"invoice.due": {"$exists": True}, "invoiceNo": {"$exists": False}}
    found = list(mongo.orders().find(query, {"ref": 1}).hint("invoice_due").limit(limit))
    for order in found:
        assign(order["_id"], ref=order["ref"])
    return len(found)
