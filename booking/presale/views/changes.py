"""The buyer changes their booking on its page, within the theater's rules
(sales/buyer_changes.py): cancel tickets, hand one on, exchange tickets for other seats picked on
the performance's seat map. Each POST parses the form, calls one service and goes back to the
order page with what happened; a refusal is a 4xx page saying why, and nothing changed."""

from collections.abc import Mapping
from typing import Any

from django.contrib import messages
from django.shortcuts import redirect, render
from django.utils.translation import gettext
from django.views.decorators.http import require_http_methods, require_POST

from booking.core import clock
from booking.core.errors import BookingError, NotFound
from booking.core.formatting import format_money
from booking.core.ids import object_id
from booking.presale.context import NO_SUCH_BOOKING, TooManyLookups, error_page, too_many_lookups, visible_order
from booking.sales import buyer_changes, selectors
from booking.web import seatmap_html
from booking.web.errors import status_for

MAX_FORM_VALUES = 60


def _order(request, ref):
    """The order this visitor may change, or the page saying why not."""
    try:
        order = visible_order(request, ref)
    except TooManyLookups:
        return None, too_many_lookups(request)
    if order is None:
        return None, error_page(request, gettext(NO_SUCH_BOOKING), 404)
    return order, None


def _values(request, name: str) -> list[str]:
    values = request.POST.getlist(name)
    return values[: MAX_FORM_VALUES + 1]  # more than a booking can hold is refused by the service


@require_POST
def cancel_tickets(request, ref):
    order, refused = _order(request, ref)
    if order is None:
        return refused
    everything = request.POST.get("all") == "1"
    try:
        done = buyer_changes.cancel_tickets(
            order_id=order["_id"],
            tickets=None if everything else _values(request, "ticket"),
            confirmed=request.POST.get("fingerprint") or None,
            now=clock.now(),
        )
    except BookingError as exc:
        return error_page(request, exc, status_for(exc))
    made = done.get("refunds") or []
    refunded = made[-1]["tickets"] if made else None  # the tickets of this cancel: one record per payment
    amount = sum(r["amount"] for r in made if r["tickets"] == refunded)
    messages.success(
        request,
        gettext("The tickets were canceled; %(amount)s goes back to your card. A confirmation is on its way.")
        % {"amount": format_money(amount, done["currency"])},
    )
    return redirect("booking:order", ref=done["ref"])


@require_POST
def transfer_ticket(request, ref):
    order, refused = _order(request, ref)
    if order is None:
        return refused
    try:
        done = buyer_changes.transfer_ticket(
            order_id=order["_id"],
            ticket=request.POST.get("ticket", ""),
            name=request.POST.get("name", ""),
            email=request.POST.get("email", ""),
            now=clock.now(),
        )
    except BookingError as exc:
        return error_page(request, exc, status_for(exc))
    handed = done["transfers"][-1]
    messages.success(
        request,
        gettext("The ticket is now %(name)s's: their new ticket is on its way to %(email)s; yours no longer admits.")
        % {"name": handed["name"], "email": handed["email"]},
    )
    return redirect("booking:order", ref=done["ref"])


def seat_rows(session: Mapping[str, Any]) -> list[dict]:  # a Session
    """The performance's seats as the picker shows them: free ones can be ticked, the rest not."""
    rows = []
    for r, row in enumerate(session["layout"]["rows"]):
        cells: list[dict | None] = []
        for c, cell in enumerate(row["cells"]):
            if cell is None:
                cells.append(None)
                continue
            state = session["seats"][r][c]
            cells.append({"key": f"{r}:{c}", "label": cell["label"], "cat": cell["cat"], "free": state == 0})
        rows.append({"label": row["label"], "cells": cells})
    return rows


@require_http_methods(["GET", "HEAD", "POST"])
def exchange(request, ref):
    """GET: the tickets that may move, the performances of the show to move to and the chosen
    one's seat map as it is now; POST: move them."""
    order, refused = _order(request, ref)
    if order is None:
        return refused
    now = clock.now()
    options = buyer_changes.change_options(order=order, now=now)
    if not options.get("exchange"):
        reason = next((t["exchange"] for t in options.get("tickets", []) if t["exchange"]), "")
        return error_page(request, reason or gettext("This booking cannot be exchanged online."), 409)
    targets = [{**s, "id": s["_id"]} for s in buyer_changes.exchange_targets(order=order, now=now)]
    source = request.POST if request.method == "POST" else request.GET
    try:
        chosen = object_id(source.get("session") or order["lines"][0]["sessionId"], "session")
    except NotFound as exc:
        return error_page(request, exc, 404)
    error, status = "", 200
    if request.method == "POST":
        try:
            done = buyer_changes.exchange_tickets(
                order_id=order["_id"],
                tickets=_values(request, "ticket"),
                session_id=chosen,
                keys=_values(request, "seat"),
                now=now,
            )
        except BookingError as exc:
            error, status = exc.message, status_for(exc)
        else:
            if done.get("exchangeOpen"):
                messages.info(request, gettext("Your new seats are kept for you: please pay the difference below."))
            else:
                messages.success(request, gettext("Your tickets were moved; the new ones are below."))
            return redirect("booking:order", ref=done["ref"])
    session = selectors.get_session(chosen)
    if session is None or not any(t["_id"] == chosen for t in targets):
        session = None
    context = {
        "order": order,
        "options": options,
        "targets": targets,
        "chosen": chosen,
        "session": {**session, "id": session["_id"]} if session else None,
        "rows": seat_rows(session) if session else [],
        "legend": seatmap_html.legend(session) if session else [],
        "category_css": seatmap_html.category_css(session) if session else "",
        "picked": set(_values(request, "seat")) if request.method == "POST" else set(),
        "ticked": set(_values(request, "ticket")) if request.method == "POST" else set(),
        "error": error,
    }
    return render(request, "booking/exchange.html", context, status=status)
