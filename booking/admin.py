"""The staff site: theaters, sessions, carts and orders in Django's own admin.

The data is in MongoDB, so the models registered here are stand-ins without tables (see
booking/models.py for why) and each ModelAdmin serves its own views (booking/control/).
"""

from django.contrib import admin

from booking.control.api_tokens import ApiTokenAdmin
from booking.control.carts import CartAdmin
from booking.control.entries import BoxOfficeAdmin, DoorCheckinAdmin
from booking.control.orders import OrderAdmin
from booking.control.promo_codes import PromoCodeAdmin
from booking.control.reports import ReportAdmin
from booking.control.sessions import SessionAdmin
from booking.control.subscriptions import SubscriptionAdmin
from booking.control.theaters import TheaterAdmin
from booking.control.tills import TillAdmin
from booking.control.vouchers import GiftVoucherAdmin
from booking.control.waiting_rooms import WaitingRoomAdmin
from booking.control.webhooks import WebhookEndpointAdmin
from booking.models import (
    ApiToken,
    BoxOffice,
    Cart,
    DoorCheckin,
    GiftVoucher,
    Order,
    PromoCode,
    Report,
    Session,
    Subscription,
    Theater,
    TillClosing,
    WaitingRoom,
    WebhookEndpoint,
)
from booking.web.login_lockout import AdminLoginForm

admin.site.login_form = AdminLoginForm  # says when too many failures stopped a sign-in
admin.site.register(Theater, TheaterAdmin)
admin.site.register(Session, SessionAdmin)
admin.site.register(Cart, CartAdmin)
admin.site.register(Order, OrderAdmin)
admin.site.register(WaitingRoom, WaitingRoomAdmin)  # the waiting room for big on-sales
admin.site.register(PromoCode, PromoCodeAdmin)  # promo codes and voucher batches
admin.site.register(Report, ReportAdmin)  # sales reports and exports
admin.site.register(TillClosing, TillAdmin)  # each seller's till closed at the end of the day, Z reports
admin.site.register(BoxOffice, BoxOfficeAdmin)  # "Box office": on to the sessions to sell
admin.site.register(DoorCheckin, DoorCheckinAdmin)  # "Door check-in": on to /checkin/
admin.site.register(ApiToken, ApiTokenAdmin)  # the REST API's tokens (docs/api.md)
admin.site.register(Subscription, SubscriptionAdmin)  # season subscriptions, sold at the counter too
admin.site.register(WebhookEndpoint, WebhookEndpointAdmin)  # the theater's other systems told of orders
admin.site.register(GiftVoucher, GiftVoucherAdmin)  # gift vouchers: search, history, sell, print
