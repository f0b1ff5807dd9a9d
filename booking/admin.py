"""The staff site: theaters, sessions, carts and orders in Django's own admin.

The data is in MongoDB, so the models registered here are stand-ins without tables (see
booking/models.py for why) and each ModelAdmin serves its own views (booking/staff/).
"""

from django.contrib import admin

from .login_lockout import AdminLoginForm
from .models import BoxOffice, Cart, DoorCheckin, Order, PromoCode, Report, Session, Theater, WaitingRoom
from .staff.carts import CartAdmin
from .staff.entries import BoxOfficeAdmin, DoorCheckinAdmin
from .staff.orders import OrderAdmin
from .staff.promo_codes import PromoCodeAdmin
from .staff.reports import ReportAdmin
from .staff.sessions import SessionAdmin
from .staff.theaters import TheaterAdmin
from .staff.waiting_rooms import WaitingRoomAdmin

admin.site.login_form = AdminLoginForm  # says when too many failures stopped a sign-in
admin.site.register(Theater, TheaterAdmin)
admin.site.register(Session, SessionAdmin)
admin.site.register(Cart, CartAdmin)
admin.site.register(Order, OrderAdmin)
admin.site.register(WaitingRoom, WaitingRoomAdmin)  # the waiting room for big on-sales
admin.site.register(PromoCode, PromoCodeAdmin)  # promo codes and voucher batches
admin.site.register(Report, ReportAdmin)  # sales reports and exports
admin.site.register(BoxOffice, BoxOfficeAdmin)  # "Box office": on to the sessions to sell
admin.site.register(DoorCheckin, DoorCheckinAdmin)  # "Door check-in": on to /checkin/
