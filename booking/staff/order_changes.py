"""Changing an order in the admin: move tickets to other seats (an exchange, with a preview of the
new seats and the price difference before anything changes). The views live here, beside
OrderAdmin (booking/staff/orders.py), which lists their routes; the work is
services/exchanges.py."""

from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, cast

from django import forms
from django.contrib import messages
from django.http import HttpResponseRedirect
from django.utils.decorators import method_decorator
from django.utils.timezone import localtime
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods, require_POST

from .. import clock, mongo
from ..domain import SessionStatus
from ..errors import BookingError, InvalidRequest
from ..formatting import format_money
from ..ids import object_id
from ..localized import sold_ticket_type, ticket_type_name
from ..order_history import order_history
from ..seat_grid import parse_seat_key
from ..services import exchanges
from .base import CHANGE, AdminMixinBase
from .seat_chart import session_rows

ROUTES = [
    ("<str:object_id>/exchange/", "order_exchange", "exchange"),
    ("<str:object_id>/exchange/call-off/", "order_exchange_call_off", "exchange_call_off"),
]


def exchange_targets(order: dict) -> list[dict]:
    """The performances tickets can move to: the order's own (first) and the next ones on sale."""
    now = clock.now()
    fields = {"name": 1, "start": 1, "theaterName": 1, "status": 1}
    found = list(
        mongo.sessions()
        .find({"start": {"$gt": now}, "status": SessionStatus.ON_SALE}, fields)
        .sort([("start", 1), ("_id", 1)])
        .limit(60)
    )
    own = {line["sessionId"] for line in order.get("lines", [])}
    return sorted(found, key=lambda s: (s["_id"] not in own, s["start"], s["_id"]))


class SeatKeysField(forms.MultipleChoiceField):
    """Seat keys ticked on the map ("3:12"); which exist is the exchange's own check."""

    def valid_value(self, value) -> bool:
        return True


class ExchangeForm(forms.Form):
    tickets = forms.MultipleChoiceField(
        label=gettext_lazy("Tickets to move"),
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": gettext_lazy("Choose the tickets to move.")},
    )
    session = forms.ChoiceField(label=gettext_lazy("To the performance"))
    seats = SeatKeysField(required=False, widget=forms.MultipleHiddenInput)
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

    def __init__(self, *args, order: dict, targets: list[dict], **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.MultipleChoiceField, self.fields["tickets"]).choices = [
            (line["ticket"], f"{line['row']}{line['seat']} · {format_money(line['price'], order['currency'])}")
            for line in order.get("lines", [])
        ]
        cast(forms.ChoiceField, self.fields["session"]).choices = [
            (str(s["_id"]), f"{s['name']} · {localtime(s['start']):%a %d %b %Y %H:%M} · {s.get('theaterName', '')}")
            for s in targets
        ]

    def clean_seats(self):
        seats = self.cleaned_data.get("seats") or []
        for key in seats:
            try:
                parse_seat_key(key)
            except ValueError:
                raise forms.ValidationError(_("That is not a seat.")) from None
        return seats


class OrderChangesMixin(AdminMixinBase):
    if TYPE_CHECKING:

        def _order(self, object_id) -> dict: ...  # OrderAdmin's

    """Mixed into OrderAdmin: needs ``_order``, ``require``, ``log``, ``url``, ``render``."""

    def history_context(self, order: dict) -> dict:
        waiting = exchanges.awaiting_payment(order)
        return {
            "history": order_history(order),
            "exchange_waiting": {**waiting, "amount": waiting["difference"]} if waiting else None,
            "can_exchange": order["state"] in ("paid", "partially_refunded")
            and bool(order.get("paidWith"))
            and bool(order.get("lines")),
        }

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def order_exchange(self, request, object_id):
        """Step 1 (GET): tickets and performance; step 2: tick the new seats on its map; "Preview"
        shows the new tickets and the difference; "Exchange" does it. Nothing changes before."""
        self.require(request, "change")
        order = self._order(object_id)
        targets = exchange_targets(order)
        data = request.POST if request.method == "POST" else None
        first = str(order["lines"][0]["sessionId"]) if order.get("lines") else ""
        form = ExchangeForm(data, order=order, targets=targets, initial={"session": first})
        status, preview, error = 200, None, ""
        shown, seats = first, []
        if data is not None and not form.is_valid():
            status = 400
            shown = data.get("session", first)
        elif data is not None:
            shown, seats = form.cleaned_data["session"], form.cleaned_data["seats"]
            action = data.get("action", "")
            if action in ("preview", "confirm"):
                try:
                    plan = exchanges.plan(order["_id"], form.cleaned_data["tickets"], object_id_or_none(shown), seats)
                    if action == "confirm":
                        return self._do_exchange(request, order, form, plan)
                    preview = plan_view(plan)
                except BookingError as exc:
                    error = exc.message
                    status = 400 if isinstance(exc, InvalidRequest) else 409
        shown_id = object_id_or_none(shown)
        now_held = {line["key"] for line in order.get("lines", []) if line["sessionId"] == shown_id}
        rows = seat_rows(shown_id, seats, mine=now_held)
        return self.render(
            request,
            "admin/booking/order/exchange.html",
            {
                "title": _("Move tickets of order %(ref)s") % {"ref": order["ref"]},
                "order": order,
                "form": form,
                "rows": rows,
                "shown": shown,
                "preview": preview,
                "error": error,
            },
            status=status,
        )

    @method_decorator(require_POST)
    def order_exchange_call_off(self, request, object_id):
        """Give up an exchange that waits for the customer's payment; the kept seats are freed."""
        self.require(request, "change")
        order = self._order(object_id)
        try:
            after = exchanges.call_off(order["_id"], by=staff_name(request.user))
        except BookingError as exc:
            messages.error(request, exc.message)
            return HttpResponseRedirect(self.url("change", order["_id"]))
        if after["exchanges"][-1]["state"] == exchanges.ABANDONED:
            text = _("The exchange was called off; the seats kept for it are free again.")
        else:
            text = _("The customer had just paid: the exchange went through.")
        self.log(request, CHANGE, order["_id"], f"Order {order['ref']}", text)
        messages.success(request, text)
        return HttpResponseRedirect(self.url("change", order["_id"]))

    def _do_exchange(self, request, order: dict, form: ExchangeForm, plan: exchanges.Plan):
        data = form.cleaned_data
        done = exchanges.exchange(
            order["_id"],
            data["tickets"],
            plan.session["_id"],
            data["seats"],
            settle=data["settle"],
            by=staff_name(request.user),
            reason=data["reason"],
        )
        record = done["exchanges"][-1]
        if record["state"] == exchanges.AWAITING:
            text = _(
                "The new seats are kept for the customer until they pay %(amount)s online (a link is on its way)"
            ) % {"amount": format_money(record["difference"], order["currency"])}
            self.log(request, CHANGE, order["_id"], f"Order {order['ref']}", text)
            messages.info(request, text + ".")
            return HttpResponseRedirect(self.url("change", order["_id"]))
        text = _("Moved %(seats)s to %(new)s") % {
            "seats": ", ".join(f"{o['row']}{o['seat']}" for o in record["old"]),
            "new": ", ".join(f"{n['row']}{n['seat']}" for n in record["new"]),
        }
        diff = record["difference"]
        if diff < 0:
            text += " · " + _("%(amount)s back") % {"amount": format_money(-diff, order["currency"])}
        elif diff > 0:
            text += " · " + _("%(amount)s taken at the counter") % {"amount": format_money(diff, order["currency"])}
        self.log(request, CHANGE, order["_id"], f"Order {order['ref']}", text)
        messages.success(request, text + ". " + _("The customer gets the new tickets by e-mail."))
        return HttpResponseRedirect(self.url("change", order["_id"]))


def object_id_or_none(raw: str):
    try:
        return object_id(raw, "session")
    except BookingError:
        return None


def seat_rows(session_id, checked, mine: AbstractSet[str] = frozenset()) -> list | None:
    """The performance's map with its free seats to tick (blocked house seats are not for sale);
    ``mine``: the order's seats there now, outlined so staff see where the customer sits."""
    session = mongo.sessions().find_one({"_id": session_id}) if session_id else None
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
    currency = plan.currency
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
        "session": plan.session,
        "difference": plan.difference,
        "amount": format_money(abs(plan.difference), currency),
    }


def staff_name(user) -> str:
    name = user.get_username()
    return f"{name} <{user.email}>" if user.email else name
