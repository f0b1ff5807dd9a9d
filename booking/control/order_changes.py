"""Changing an order in the admin: move tickets to other seats (an exchange, with a preview of the
new seats and the price difference before anything changes). ``ExchangeScreens``, under
OrderAdmin's URLs (booking/control/orders.py); the work is sales/exchanges.py."""

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import Any, cast

from django import forms
from django.contrib import messages
from django.utils import dateformat
from django.utils.decorators import method_decorator
from django.utils.timezone import localtime
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods, require_POST

from booking.control import selectors
from booking.control.base import staff_name
from booking.control.order_screens import OrderScreens
from booking.control.seat_chart import session_rows
from booking.core import clock
from booking.core.domain import SEAT_OWNING_ORDER_STATES, Order, Session, SessionStatus
from booking.core.errors import BookingError, InvalidRequest
from booking.core.formatting import format_money
from booking.core.ids import object_id
from booking.core.localized import localized, sold_ticket_type, ticket_type_name
from booking.sales import exchanges
from booking.venues.seat_grid import parse_seat_key
from booking.web.order_history import order_history


class SeatKeysField(forms.MultipleChoiceField):
    """Seat keys ticked on the map ("3:12"); which exist is the exchange's own check."""

    def valid_value(self, value) -> bool:
        return True


class TargetSearchForm(forms.Form):
    """Finds the performance to move to: words of its title or hall, its day."""

    find = forms.CharField(
        label=gettext_lazy("Find a performance"),
        max_length=100,
        required=False,
        widget=forms.TextInput(
            attrs={"type": "search", "placeholder": gettext_lazy("Title or hall"), "autocomplete": "off"}
        ),
    )
    day = forms.DateField(
        label=gettext_lazy("On"),
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d"),
    )


class ExchangeForm(forms.Form):
    tickets = forms.MultipleChoiceField(
        label=gettext_lazy("Tickets to move"),
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": gettext_lazy("Choose the tickets to move.")},
    )
    session = forms.ChoiceField(label=gettext_lazy("To the performance"))
    seats = SeatKeysField(required=False, widget=forms.MultipleHiddenInput)
    # the performance whose seat map the page showed: the seats ticked are that map's
    map = forms.CharField(required=False, widget=forms.HiddenInput)
    settle = forms.ChoiceField(
        label=gettext_lazy("Price difference"),
        choices=[
            (
                exchanges.PROVIDER,
                gettext_lazy(
                    "Through the order's payment: a lower price refunded, a higher one paid online by the customer"
                ),
            ),
            (exchanges.COUNTER, gettext_lazy("Settle at the counter (cash or card terminal)")),
        ],
        initial=exchanges.PROVIDER,
        widget=forms.RadioSelect,
    )
    reason = forms.CharField(label=gettext_lazy("Reason"), max_length=200, required=False)

    def __init__(self, *args, order: Order, targets: selectors.ExchangeTargets, **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.MultipleChoiceField, self.fields["tickets"]).choices = [
            (line["ticket"], f"{line['row']}{line['seat']} · {format_money(line['price'], order['currency'])}")
            for line in order.get("lines", [])
        ]
        own = {s["_id"] for s in targets.own}
        cast(forms.ChoiceField, self.fields["session"]).choices = [
            (s["id"], target_label(s, own=s["_id"] in own)) for s in targets.sessions
        ]

    def clean_seats(self):
        seats = self.cleaned_data.get("seats") or []
        for key in seats:
            try:
                parse_seat_key(key)
            except ValueError:
                raise forms.ValidationError(_("That is not a seat.")) from None
        return seats

    def clean_map(self):
        raw = self.cleaned_data.get("map") or ""
        return object_id_or_none(raw) if raw else None

    def clean(self):
        data = super().clean() or {}
        if data.get("seats") and data.get("map") is None:
            self.add_error("seats", _("The seat map was not sent with the seats; tick the new seats again."))
        return data


def performance_line(session: Mapping[str, Any]) -> str:
    """A performance as staff tell it from the others: title, hall (a stadium: venue and section),
    day and time."""
    when = dateformat.format(localtime(session["start"]), "D j M Y, H:i") if session.get("start") else ""
    return " · ".join(part for part in (localized(session, "name"), localized(session, "theaterName"), when) if part)


def target_label(session: Mapping[str, Any], *, own: bool) -> str:
    """One performance in the list; the order's own and one no longer on sale say so."""
    label = performance_line(session)
    if own:
        label += " " + _("(this booking)")
    if session.get("status") != SessionStatus.ON_SALE or session["start"] <= clock.now():
        label += " – " + _("not on sale")
    return label


def history_context(order: Order) -> dict:
    """The order page's part: what happened to the order, an exchange waiting, whether one may start."""
    waiting = exchanges.awaiting_payment(order)
    return {
        "history": order_history(order),
        "exchange_waiting": {**waiting, "amount": waiting["difference"]} if waiting else None,
        "can_exchange": order["state"] in SEAT_OWNING_ORDER_STATES
        and bool(order.get("paidWith"))
        and bool(order.get("lines")),
    }


class ExchangeScreens(OrderScreens):
    """``<id>/exchange/`` and ``<id>/exchange/call-off/``: tickets moved to other seats."""

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def order_exchange(self, request, object_id):
        """Step 1 (GET): tickets and performance (the order's own first; a search finds others);
        step 2: tick the new seats on the chosen performance's map; "Preview" shows the new tickets
        and the difference; "Exchange" does it. Nothing changes before. The map shown is always
        the chosen performance's; seats ticked on another map are dropped or refused."""
        order = self.order(request, object_id, "change")
        data = request.POST if request.method == "POST" else None
        action = data.get("action", "") if data is not None else ""
        search = TargetSearchForm(data)
        found = search.cleaned_data if search.is_valid() else {}
        targets = selectors.exchange_targets(
            order,
            text=found.get("find", ""),
            day=found.get("day"),
            keep=object_id_or_none(data.get("session", "")) if data is not None else None,
        )
        first = targets.own[0]["id"] if targets.own else ""
        form = ExchangeForm(data, order=order, targets=targets, initial={"session": first})
        valid = form.is_valid() if data is not None else True
        cleaned = form.cleaned_data if data is not None else {}
        chosen = cleaned.get("session") or first
        chosen_id = object_id_or_none(chosen)
        same_map = cleaned.get("map") == chosen_id
        status, preview, error = 200, None, ""
        if data is not None and (search.errors or "session" in form.errors):
            status = 400
        if action in ("preview", "confirm") and not valid:
            status = 400
        elif action in ("preview", "confirm") and status == 200:
            try:
                plan = exchanges.plan(
                    order["_id"], cleaned["tickets"], chosen_id, cleaned["seats"], seats_of=cleaned["map"]
                )
                if action == "confirm":
                    return self._do_exchange(request, order, form, plan)
                preview = plan_view(plan)
            except BookingError as exc:
                error = exc.message
                status = 400 if isinstance(exc, InvalidRequest) else 409
        seats = cleaned.get("seats", []) if same_map else []
        now_held = {line["key"] for line in order.get("lines", []) if line["sessionId"] == chosen_id}
        shown = selectors.get_session(chosen_id) if chosen_id else None
        return self.render(
            request,
            "admin/booking/order/exchange.html",
            {
                "title": _("Move tickets of order %(ref)s") % {"ref": order["ref"]},
                "order": order,
                "form": form,
                "search": search,
                "targets": targets,
                "searched": bool(found.get("find") or found.get("day")),
                "show_errors": action in ("preview", "confirm"),
                "rows": seat_rows(shown, seats, mine=now_held),
                "shown": performance_line(shown) if shown else "",
                "map_id": chosen,
                "preview": preview,
                "error": error,
            },
            status=status,
        )

    @method_decorator(require_POST)
    def order_exchange_call_off(self, request, object_id):
        """Give up an exchange that waits for the customer's payment; the kept seats are freed."""
        order = self.order(request, object_id, "change")
        back = self.url("change", order["_id"])
        try:
            after = exchanges.call_off(order["_id"], by=staff_name(request.user))
        except BookingError as exc:
            return self.refused(request, exc.message, back)
        if after["exchanges"][-1]["state"] == exchanges.ABANDONED:
            text = _("The exchange was called off; the seats kept for it are free again.")
        else:
            text = _("The customer had just paid: the exchange went through.")
        return self.order_saved(request, order, note=text, to=back)

    def _do_exchange(self, request, order: Order, form: ExchangeForm, plan: exchanges.Plan):
        data = form.cleaned_data
        done = exchanges.exchange(
            order["_id"],
            data["tickets"],
            plan.session["_id"],
            data["seats"],
            settle=data["settle"],
            by=staff_name(request.user),
            reason=data["reason"],
            seats_of=data["map"],
        )
        record = done["exchanges"][-1]
        back = self.url("change", order["_id"])
        if record["state"] == exchanges.AWAITING:
            text = _(
                "The new seats are kept for the customer until they pay %(amount)s online (a link is on its way)"
            ) % {"amount": format_money(record["difference"], order["currency"])}
            return self.order_saved(request, order, note=text, shown=text + ".", to=back, level=messages.info)
        text = _("Moved %(seats)s to %(new)s") % {
            "seats": ", ".join(f"{o['row']}{o['seat']}" for o in record["old"]),
            "new": ", ".join(f"{n['row']}{n['seat']}" for n in record["new"]),
        }
        diff = record["difference"]
        if diff < 0:
            text += " · " + _("%(amount)s back") % {"amount": format_money(-diff, order["currency"])}
        elif diff > 0:
            text += " · " + _("%(amount)s taken at the counter") % {"amount": format_money(diff, order["currency"])}
        shown = text + ". " + _("The customer gets the new tickets by e-mail.")
        return self.order_saved(request, order, note=text, shown=shown, to=back)


def object_id_or_none(raw: str):
    try:
        return object_id(raw, "session")
    except BookingError:
        return None


def seat_rows(session: Session | None, checked, mine: AbstractSet[str] = frozenset()) -> list | None:
    """The performance's map with its free seats to tick (blocked house seats are not for sale);
    ``mine``: the order's seats there now, outlined so staff see where the customer sits."""
    if session is None or "seats" not in session:
        return None
    rows = session_rows(session, {}, checked=set(checked))
    for row in rows:
        for cell in row.cells:
            cell.selectable = cell.state == "free"
            cell.checked = cell.checked and cell.selectable
            if cell.key in mine:
                cell.mine = True
                cell.title = _("%(seat)s – this booking") % {"seat": cell.title}
    return rows


def plan_view(plan: exchanges.Plan) -> dict:
    """The preview: seat by seat, both sides' performance, hall and date, and what differs."""
    currency = plan.currency
    known = {s["_id"]: s for s in plan.order.get("sessions", [])}
    sources: list[Mapping[str, Any]] = [
        known.get(i, {"_id": i}) for i in dict.fromkeys(o["sessionId"] for o in plan.old)
    ]
    target = plan.session
    day = localtime(target["start"]).date()
    changes = []
    if any(localized(s, "theaterName") != localized(target, "theaterName") for s in sources):
        changes.append(_("another hall"))
    if any(s.get("start") and localtime(s["start"]).date() != day for s in sources):
        changes.append(_("another date"))
    elif any(s.get("start") != target["start"] for s in sources):
        changes.append(_("another time"))
    pairs = [
        {
            "old": f"{o['row']}{o['seat']}",
            "old_price": format_money(o["price"] - o.get("discount", 0), currency),
            "new": f"{n['row']}{n['seat']}",
            "new_price": format_money(n["price"], currency),
            "type": ticket_type_name(sold_ticket_type(n)),
        }
        for o, n in zip(plan.old, plan.new, strict=True)
    ]
    return {
        "pairs": pairs,
        "sources": [performance_line(s) for s in sources],
        "target": performance_line(target),
        "changes": ", ".join(str(c) for c in changes),
        "difference": plan.difference,
        "amount": format_money(abs(plan.difference), currency),
    }
