"""What every group of an order's staff pages shares (``OrderScreens``): the permission and the
order the URL names, read in one step (``order``), and a write ended with the order named in the
admin log, the staff member told and on to the next page (``order_saved``). The groups are in
control/orders.py, order_payments.py, order_changes.py and order_prints.py; OrderAdmin lists their
URLs."""

from collections.abc import Callable, Mapping
from typing import Any

from django.contrib import messages
from django.http import HttpResponseRedirect

from booking.control import selectors
from booking.control.base import CHANGE, Screens
from booking.core.domain import Order


def order_label(order: Mapping[str, Any]) -> str:
    """An order in the admin log: its booking reference."""
    return f"Order {order['ref']}"


class OrderScreens(Screens):
    """Pages of one order (``<object_id>/...``)."""

    def order(self, request, object_id, action: str = "view") -> Order:
        """The order the URL names, for a staff member allowed to ``action`` (else 403; no such
        order: 404)."""
        self.require(request, action)
        return self.order_named(object_id)

    def order_named(self, object_id) -> Order:
        """The order the URL names, or a 404 (the permission asked already)."""
        return self.document(selectors.get_order, object_id, "No such order.")

    def order_saved(
        self,
        request,
        order: Mapping[str, Any],
        *,
        note: str,
        shown: str | None = None,
        to: str,
        level: Callable = messages.success,
    ) -> HttpResponseRedirect:
        """A write to the order done: ``note`` in the admin log, ``shown`` (or the note) to the
        staff member at ``level``, on to ``to``."""
        return self.saved(request, CHANGE, order["_id"], order_label(order), note=note, shown=shown, to=to, level=level)
