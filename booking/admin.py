"""The staff site: theaters, sessions, carts and orders in Django's own admin.

The data is in MongoDB, so the models registered here are stand-ins without tables (see
booking/models.py for why) and each ModelAdmin serves its own views (booking/staff/).
"""

from django.contrib import admin

from .models import Cart, Order, Session, Theater
from .staff.carts import CartAdmin
from .staff.orders import OrderAdmin
from .staff.sessions import SessionAdmin
from .staff.theaters import TheaterAdmin

admin.site.register(Theater, TheaterAdmin)
admin.site.register(Session, SessionAdmin)
admin.site.register(Cart, CartAdmin)
admin.site.register(Order, OrderAdmin)
