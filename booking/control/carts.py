"""Carts in the admin: by state with age and expiry, detail, force-expire an active cart."""

from django.utils import timezone
from django.utils.decorators import method_decorator
from django.utils.translation import gettext, ngettext
from django.views.decorators.http import require_POST

from booking.control import selectors
from booking.control.base import CHANGE, MongoModelAdmin
from booking.core import clock
from booking.core.domain import Cart, CartState, is_live
from booking.core.localized import cart_state_label
from booking.sales import carts as cart_service

ALL = "all"  # the list's tab of every state


class CartAdmin(MongoModelAdmin):
    routes = [
        ("", "cart_list", "changelist"),
        ("<str:object_id>/change/", "cart_detail", "change"),
        ("<str:object_id>/expire/", "cart_expire", "expire"),
    ]

    def has_add_permission(self, request):
        return False  # carts are made by buyers only

    def has_delete_permission(self, request, obj=None):
        return False

    def cart_list(self, request):
        self.require(request, "view")
        state = request.GET.get("state", CartState.ACTIVE)
        if state not in (*selectors.CART_STATES, ALL):
            state = CartState.ACTIVE
        carts = selectors.carts_by_state(None if state == ALL else state)
        now = clock.now()
        for cart in carts:
            cart["seatCount"] = len(cart.get("items", []))
            cart["ended"] = cart["expiresAt"] <= now
        counts = selectors.cart_state_counts()
        tabs = [(s, cart_state_label(s), selectors.count_label(counts.get(s, 0))) for s in selectors.CART_STATES]
        total = selectors.count_label(sum(counts.values()), capped=max(counts.values(), default=0))
        return self.render(
            request,
            "admin/booking/cart/list.html",
            {"title": gettext("Carts"), "carts": carts, "state": state, "tabs": tabs, "total": total},
        )

    def _cart(self, object_id) -> Cart:
        return self.document(selectors.get_cart, object_id, "No such cart.")

    def cart_detail(self, request, object_id):
        self.require(request, "view")
        cart = self._cart(object_id)
        sessions = selectors.session_names(i["sessionId"] for i in cart.get("items", []))
        items = [{**item, "session": sessions.get(item["sessionId"])} for item in cart.get("items", [])]
        order = selectors.order_for_cart(cart["_id"])
        return self.render(
            request,
            "admin/booking/cart/detail.html",
            {
                "title": gettext("Cart %(_id)s") % {"_id": cart["_id"]},
                "cart": cart,
                "items": items,
                "order": order,
                "live": is_live(cart, clock.now()),
                "now": timezone.now(),
            },
        )

    @method_decorator(require_POST)
    def cart_expire(self, request, object_id):
        self.require(request, "change")
        cart = self._cart(object_id)
        freed = cart_service.force_expire_cart(cart["_id"])
        back = self.url("change", cart["_id"])
        if freed is None:
            reason = gettext("This cart is %(value)s, not active; nothing was changed.") % {
                "value": cart["state"].replace("_", " ")
            }
            return self.refused(request, reason, back)
        shown = ngettext(
            "The cart was expired and %(count)d seat released.",
            "The cart was expired and %(count)d seats released.",
            freed,
        )
        return self.saved(
            request,
            CHANGE,
            cart["_id"],
            f"Cart {cart['_id']}",
            note=f"Force-expired; {freed} seats released.",
            shown=shown % {"count": freed},
            to=back,
        )
