"""Show titles and descriptions in the buyer's language.

Staff write a show's name and description in the site's source language (English) and may add a
German one: ``nameDe`` / ``descriptionDe`` on the session document (the admin's session form; see
``sales/sessions.py``), copied to an order's session summary (``nameDe``) so its mails and
tickets use it. A page in German shows the German text where there is one, else the main one.
"""

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.utils import translation
from django.utils.functional import Promise
from django.utils.translation import gettext, gettext_lazy, gettext_noop, pgettext_lazy

from booking.core.domain import CartState, Category, OrderState, SessionStatus

# The languages besides the source language, and the suffix of their fields ("de" -> nameDe).
TRANSLATED_FIELDS = ("name", "description")


def field_suffix(language: str | None) -> str:
    """ "De" for German, "" for the source language (whose text is the main field)."""
    base = (language or settings.LANGUAGE_CODE).split("-")[0]
    return "" if base == settings.LANGUAGE_CODE.split("-")[0] else base.capitalize()


def localized(doc: Mapping[str, Any] | None, field: str, language: str | None = None) -> str:
    """``doc[field]`` in ``language`` (default: the active one): its ``<field><Lang>`` when that is
    set, else the main field."""
    doc = doc or {}
    suffix = field_suffix(language or translation.get_language())
    if suffix:
        text = doc.get(field + suffix)
        if text:
            return text
    return doc.get(field) or ""


def category_names(categories: list[Category] | None, language: str | None = None) -> dict[str, str]:
    """code -> name of a layout's seat categories in ``language`` (default: the active one): the
    staff's German name (``nameDe``, the theater's layout editor) on German pages when there is one."""
    return {c["code"]: localized(c, "name", language) for c in categories or []}


def order_categories(categories: list[Category] | None) -> dict:
    """What an order (or an exchange) keeps of a session's categories, for its pages, mails,
    tickets and receipt in the buyer's language later: ``categories`` {code: name} and, when staff
    gave German names, ``categoriesDe``."""
    kept: dict = {"categories": {c["code"]: c["name"] for c in categories or []}}
    german = {c["code"]: c["nameDe"] for c in categories or [] if c.get("nameDe")}
    if german:
        kept["categoriesDe"] = german
    return kept


def order_category(session: Mapping[str, Any], code: str, language: str | None = None) -> str:
    """A seat category's name from an order's session summary (``order_categories``) in
    ``language``, falling back to the main name, then the code."""
    suffix = field_suffix(language or translation.get_language())
    if suffix:
        name = (session.get("categories" + suffix) or {}).get(code)
        if name:
            return name
    return (session.get("categories") or {}).get(code, code)


# The built-in ticket type's name (sales/offers.py), stored in English and shown translated.
FULL_PRICE_NAME = gettext_noop("Full price")


# An order line keeps its ticket type's texts as ``ticketType<Field>[<Lang>]``: ticketTypeName,
# ticketTypeNameDe, ticketTypeDescription, ticketTypeDescriptionDe.
LINE_TYPE_PREFIX = "ticketType"


def type_texts(ticket_type: dict) -> dict:
    """A ticket type's (or offer's) name and condition in every language it has them: ``name``,
    ``nameDe``, ``description``, ``descriptionDe`` (the empty ones left out)."""
    return {key: text for key, text in ticket_type.items() if text and key.startswith(TRANSLATED_FIELDS)}


def line_ticket_type(offer: dict) -> dict:
    """What an order line keeps of the ticket type it is sold as: the code, and the name and
    condition in every language as they are now (``ticketType``, ``ticketTypeName``,
    ``ticketTypeNameDe``, ``ticketTypeDescription``...), so its pages, mails and tickets say later
    what the buyer chose. ``sold_ticket_type`` reads them back."""
    kept = {LINE_TYPE_PREFIX: offer["code"], LINE_TYPE_PREFIX + "Name": offer.get("name") or offer["code"]}
    kept.update({LINE_TYPE_PREFIX + key[0].upper() + key[1:]: text for key, text in type_texts(offer).items()})
    return kept


def sold_ticket_type(line: Mapping[str, Any]) -> dict:
    """What an order line keeps of its ticket type (``line_ticket_type``), in a ticket type's own
    shape (``code``, ``name``, ``nameDe``, ``description``, ...) for the two helpers below."""
    kind = line.get(LINE_TYPE_PREFIX)
    if isinstance(kind, dict):  # a line written by an early import: {code, name} under ticketType
        return kind
    kept = {"code": kind or "full"}  # a line sold before ticket types: full price
    for field in TRANSLATED_FIELDS:
        stored = LINE_TYPE_PREFIX + field.capitalize()
        kept.update({field + key[len(stored) :]: value for key, value in line.items() if key.startswith(stored)})
    return kept


def ticket_type_name(ticket_type: dict | None, language: str | None = None) -> str:
    """A ticket type's name as buyers and staff read it in ``language`` (default: the active one):
    the staff's German name (``nameDe``) on German pages when there is one, else the English name;
    the built-in "Full price" translated. ``ticket_type``: a theater's type, an offer kept by a cart
    item, or ``sold_ticket_type(line)`` of an order line."""
    name = localized(ticket_type, "name", language)
    if name and name != FULL_PRICE_NAME:
        return name
    if language:
        with translation.override(language):
            return gettext(FULL_PRICE_NAME)
    return gettext(FULL_PRICE_NAME)


def ticket_type_condition(ticket_type: dict | None, language: str | None = None) -> str:
    """What a ticket type asks of its holder (its ``description``: "Students; show ID at the door"),
    in ``language`` like ``ticket_type_name``; "" when it asks nothing."""
    return localized(ticket_type, "description", language)


# An order's state as the buyer reads it (the order page's badge, messages about the order).
ORDER_STATE_LABELS: dict[str, Promise] = {
    OrderState.PENDING_PAYMENT: gettext_lazy("Waiting for payment"),
    OrderState.PAID: gettext_lazy("Paid"),
    OrderState.EXPIRED: gettext_lazy("Expired (not paid)"),
    OrderState.CANCELED: gettext_lazy("Canceled"),
    OrderState.REFUNDED: gettext_lazy("Refunded"),
    OrderState.PARTIALLY_REFUNDED: gettext_lazy("Partly refunded"),
    OrderState.FAILED: gettext_lazy("Not completed"),
}


def order_state_label(state: str) -> str:
    return str(ORDER_STATE_LABELS.get(state, state.replace("_", " ")))


# The status of a payment, a refund, an exchange or a mail, as staff read it on an order's page.
STATUS_LABELS = {
    "pending": pgettext_lazy("status", "pending"),
    "sent": pgettext_lazy("status", "sent"),
    "failed": pgettext_lazy("status", "failed"),
    "none": pgettext_lazy("status", "none (no address)"),
    "open": pgettext_lazy("status", "open"),
    "action": pgettext_lazy("status", "waiting for the customer"),
    "processing": pgettext_lazy("status", "processing"),
    "succeeded": pgettext_lazy("status", "succeeded"),
    "canceled": pgettext_lazy("status", "canceled"),
    "abandoned": pgettext_lazy("status", "not done"),
}


def status_label(status: str) -> str:
    return str(STATUS_LABELS.get(status, status))


# A session's status, a cart's state and a waiting list entry's as staff read them in lists.
SESSION_STATUS_LABELS: dict[str, Promise] = {
    SessionStatus.DRAFT: gettext_lazy("draft"),
    SessionStatus.ON_SALE: gettext_lazy("on sale"),
    SessionStatus.CANCELED: gettext_lazy("canceled"),
}
CART_STATE_LABELS: dict[str, Promise] = {
    CartState.ACTIVE: pgettext_lazy("cart state", "active"),
    CartState.PAYING: pgettext_lazy("cart state", "paying"),
    CartState.DONE: pgettext_lazy("cart state", "bought"),
    CartState.EXPIRED: pgettext_lazy("cart state", "expired"),
    CartState.CANCELED: pgettext_lazy("cart state", "canceled"),
}

WAITING_LIST_STATE_LABELS = {
    "waiting": pgettext_lazy("waiting list entry", "waiting"),
    "offering": pgettext_lazy("waiting list entry", "seats being offered"),
    "offered": pgettext_lazy("waiting list entry", "seats offered"),
    "accepted": pgettext_lazy("waiting list entry", "bought"),
    "lapsed": pgettext_lazy("waiting list entry", "offer lapsed"),
    "left": pgettext_lazy("waiting list entry", "left the list"),
}


def session_status_label(status: str) -> str:
    return str(SESSION_STATUS_LABELS.get(status, status.replace("_", " ")))


def cart_state_label(state: str) -> str:
    return str(CART_STATE_LABELS.get(state, state.replace("_", " ")))


def waiting_list_state_label(state: str) -> str:
    return str(WAITING_LIST_STATE_LABELS.get(state, state.replace("_", " ")))
