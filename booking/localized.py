"""Show titles and descriptions in the buyer's language.

Staff write a show's name and description in the site's source language (English) and may add a
German one: ``nameDe`` / ``descriptionDe`` on the session document (the admin's session form; see
``services/sessions.py``), copied to an order's session summary (``nameDe``) so its mails and
tickets use it. A page in German shows the German text where there is one, else the main one.
"""

from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext_lazy, pgettext_lazy

# The languages besides the source language, and the suffix of their fields ("de" -> nameDe).
TRANSLATED_FIELDS = ("name", "description")


def field_suffix(language: str | None) -> str:
    """ "De" for German, "" for the source language (whose text is the main field)."""
    base = (language or settings.LANGUAGE_CODE).split("-")[0]
    return "" if base == settings.LANGUAGE_CODE.split("-")[0] else base.capitalize()


def localized(doc: dict | None, field: str, language: str | None = None) -> str:
    """``doc[field]`` in ``language`` (default: the active one): its ``<field><Lang>`` when that is
    set, else the main field."""
    doc = doc or {}
    suffix = field_suffix(language or translation.get_language())
    if suffix:
        text = doc.get(field + suffix)
        if text:
            return text
    return doc.get(field) or ""


def category_names(categories: list[dict] | None, language: str | None = None) -> dict[str, str]:
    """code -> name of a layout's seat categories in ``language`` (default: the active one): the
    staff's German name (``nameDe``, the theater's layout editor) on German pages when there is one."""
    return {c["code"]: localized(c, "name", language) for c in categories or []}


def order_categories(categories: list[dict] | None) -> dict:
    """What an order (or an exchange) keeps of a session's categories, for its pages, mails,
    tickets and receipt in the buyer's language later: ``categories`` {code: name} and, when staff
    gave German names, ``categoriesDe``."""
    kept: dict = {"categories": {c["code"]: c["name"] for c in categories or []}}
    german = {c["code"]: c["nameDe"] for c in categories or [] if c.get("nameDe")}
    if german:
        kept["categoriesDe"] = german
    return kept


def order_category(session: dict, code: str, language: str | None = None) -> str:
    """A seat category's name from an order's session summary (``order_categories``) in
    ``language``, falling back to the main name, then the code."""
    suffix = field_suffix(language or translation.get_language())
    if suffix:
        name = (session.get("categories" + suffix) or {}).get(code)
        if name:
            return name
    return (session.get("categories") or {}).get(code, code)


# An order's state as the buyer reads it (the order page's badge, messages about the order).
ORDER_STATE_LABELS = {
    "pending_payment": gettext_lazy("Waiting for payment"),
    "paid": gettext_lazy("Paid"),
    "expired": gettext_lazy("Expired (not paid)"),
    "canceled": gettext_lazy("Canceled"),
    "refunded": gettext_lazy("Refunded"),
    "partially_refunded": gettext_lazy("Partly refunded"),
    "failed": gettext_lazy("Not completed"),
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
