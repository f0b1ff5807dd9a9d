"""Stand-in Django models for the booking data that lives in MongoDB.

Why unmanaged models with no table: theaters, sessions, carts and orders are MongoDB documents,
so Django's ORM cannot list or save them. But the staff site should still be *the* Django admin:
the same /admin/ URL, login, look and permissions, listed on the admin index beside Users and
Groups, with every action in Django's admin log. Registering a ModelAdmin needs a model, and a
model is also what Django hangs content types and view/add/change/delete permissions on. So each
kind of document gets a tiny ``managed = False`` model: the migration creates no table (only the
content types and permissions come from it), and the ModelAdmins in ``booking/control/`` replace
every view with ones that read through the selectors and write through the engine's services.

An instance is never saved. It is only built to name a MongoDB document in the admin log:
``pk`` is the document's id (24 hex characters) and ``str()`` is what staff read in
"Recent actions".
"""

from django.db import models
from django.utils.translation import gettext_lazy


class MongoDocument(models.Model):
    id = models.CharField(primary_key=True, max_length=24)
    label = models.CharField(max_length=200)

    class Meta:
        abstract = True
        managed = False

    def __str__(self):
        return self.label

    @classmethod
    def ref(cls, document_id, label: str):
        """An unsaved instance naming one document (for LogEntry)."""
        return cls(id=str(document_id), label=str(label)[:200])


class Theater(MongoDocument):
    class Meta:
        managed = False
        db_table = "mongodb_theaters"  # never created: the data is in MongoDB
        verbose_name = gettext_lazy("theater")
        verbose_name_plural = gettext_lazy("theaters")


class Session(MongoDocument):
    class Meta:
        managed = False
        db_table = "mongodb_sessions"
        verbose_name = gettext_lazy("session")
        verbose_name_plural = gettext_lazy("sessions")


class Cart(MongoDocument):
    class Meta:
        managed = False
        db_table = "mongodb_carts"
        verbose_name = gettext_lazy("cart")
        verbose_name_plural = gettext_lazy("carts")


class Order(MongoDocument):
    class Meta:
        managed = False
        db_table = "mongodb_orders"
        verbose_name = gettext_lazy("order")
        verbose_name_plural = gettext_lazy("orders")


# The permission the door's pages check (``DoorCheckin``), as Django names it.
CHECKIN_PERMISSION = "booking.checkin_tickets"


class DoorCheckin(MongoDocument):
    """Carries the door check-in permission (``booking.checkin_tickets``, /checkin/): door staff
    get only this one, no admin pages. Check-ins live on the orders' lines in MongoDB."""

    class Meta:
        managed = False
        db_table = "mongodb_checkins"
        verbose_name = gettext_lazy("door check-in")
        verbose_name_plural = gettext_lazy("door check-in")  # the admin index's entry, a link to /checkin/
        default_permissions = ()
        permissions = [("checkin_tickets", "Can check in tickets at the door")]


class Report(MongoDocument):
    """Carries the reports permission (``booking.view_reports``: sales figures, exports, attendee
    lists; booking/control/reports.py). The figures are aggregated from the orders in MongoDB."""

    class Meta:
        managed = False
        db_table = "mongodb_reports"
        verbose_name = gettext_lazy("sales report")
        verbose_name_plural = gettext_lazy("sales reports")
        default_permissions = ()
        permissions = [("view_reports", "Can view sales reports, exports and attendee lists")]


class WaitingRoom(MongoDocument):
    """The waiting room of a high-demand sale (booking/control/waiting_rooms.py); the document named
    is the queue's session, or the performance of a sectioned venue."""

    class Meta:
        managed = False
        db_table = "mongodb_waiting_rooms"
        verbose_name = gettext_lazy("waiting room")
        verbose_name_plural = gettext_lazy("waiting rooms")


class BoxOffice(MongoDocument):
    """Carries the permission to sell for a customer at the counter or on the phone
    (``booking.sell_at_counter``: the session page's "Sell", booking/control/counter.py). It also
    shows the sessions and orders, and records an invoice or reservation paid at the counter."""

    class Meta:
        managed = False
        db_table = "mongodb_box_office"
        verbose_name = gettext_lazy("box office")
        verbose_name_plural = gettext_lazy("box office")  # the admin index's entry, a link to the sessions to sell
        default_permissions = ()
        permissions = [("sell_at_counter", "Can sell tickets at the counter and on the phone")]


class TillClosing(MongoDocument):
    """The till closings and Z reports (booking/control/tills.py): a seller closes their own till
    with ``booking.sell_at_counter``; every seller's day is seen with ``booking.view_reports``."""

    class Meta:
        managed = False
        db_table = "mongodb_till_closings"
        verbose_name = gettext_lazy("till closing")
        verbose_name_plural = gettext_lazy("till closings")
        default_permissions = ()


class PromoCode(MongoDocument):
    """Promo codes and voucher batches (booking/control/promo_codes.py): view to look and export a
    batch, add to create codes and batches, change to edit a code's terms."""

    class Meta:
        managed = False
        db_table = "mongodb_promo_codes"
        verbose_name = gettext_lazy("promo code")
        verbose_name_plural = gettext_lazy("promo codes")


class Subscription(MongoDocument):
    """Season subscriptions (booking/control/subscriptions.py): view to list them, add to define
    one, change to open a renewal; selling one needs ``booking.sell_at_counter``."""

    class Meta:
        managed = False
        db_table = "mongodb_subscriptions"
        verbose_name = gettext_lazy("subscription")
        verbose_name_plural = gettext_lazy("subscriptions")
        default_permissions = ("view", "add", "change")


class ApiToken(MongoDocument):
    """The REST API's tokens (booking/control/api_tokens.py): view to list them and their calls,
    add to create one (its secret shown once), change to revoke one. The tokens live in MongoDB
    (``api_tokens``, booking/web/api_tokens.py)."""

    class Meta:
        managed = False
        db_table = "mongodb_api_tokens"
        verbose_name = gettext_lazy("API token")
        verbose_name_plural = gettext_lazy("API tokens")
        default_permissions = ("view", "add", "change")


class WebhookEndpoint(MongoDocument):
    """A theater's webhook endpoints and their deliveries (booking/control/webhooks.py): view to
    look at them and their deliveries, add to register one, change to edit it, rotate its secret
    and send a delivery again, delete to remove it."""

    class Meta:
        managed = False
        db_table = "mongodb_webhook_endpoints"
        verbose_name = gettext_lazy("webhook endpoint")
        verbose_name_plural = gettext_lazy("webhook endpoints")


class GiftVoucher(MongoDocument):
    """Gift vouchers (booking/control/vouchers.py): view to search them and see a balance's
    history and print one, add to sell one at the counter."""

    class Meta:
        managed = False
        db_table = "mongodb_vouchers"
        verbose_name = gettext_lazy("gift voucher")
        verbose_name_plural = gettext_lazy("gift vouchers")
