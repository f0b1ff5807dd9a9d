"""The ready-made staff groups (README, "Staff accounts and groups"), made by a data migration
(booking/migrations/0007_staff_groups.py). Staff are put in a group in the admin's Users page;
what each group may do is its permissions, which operators may change there too.

A permission added to the booking app later is not in "Manager" by itself: the migration that
adds it also grants it (``create_groups`` again, or a group's ``permissions.add``).
"""

from django.apps import apps as global_apps
from django.contrib.auth.management import create_permissions
from django.db import DEFAULT_DB_ALIAS

EVERY_BOOKING_PERMISSION = "*"

GROUPS: dict[str, list[str] | str] = {
    # sells at the counter and on the phone (gift vouchers too), finds a customer's bookings, takes
    # the money for an invoice or a box-office reservation; changes nothing else
    "Box office seller": ["sell_at_counter", "view_session", "view_order", "view_giftvoucher", "add_giftvoucher"],
    # the door check-in (/checkin/) and nothing else: no admin access
    "Door staff": ["checkin_tickets"],
    # everything about theaters, sessions, orders, carts, promo codes, waiting rooms, webhook
    # endpoints, the counter, the door and the reports; not user accounts (superusers keep those)
    "Manager": EVERY_BOOKING_PERMISSION,
    # reads the reports and exports, the orders, sessions, theaters (VAT rates) and promo codes
    "Accountant": ["view_reports", "view_order", "view_session", "view_theater", "view_promocode", "view_giftvoucher"],
}


def create_groups(apps=global_apps, schema_editor=None) -> None:
    """Make the groups that are missing and give each its permissions (those it has stay)."""
    using = schema_editor.connection.alias if schema_editor is not None else DEFAULT_DB_ALIAS
    # Django makes permissions after migrate (post_migrate): on a fresh database the ones named
    # here do not exist yet while the migrations run. The installed app's config passes
    # create_permissions' check; the models it makes them for come from ``apps``.
    create_permissions(global_apps.get_app_config("booking"), verbosity=0, using=using, apps=apps)
    group_model = apps.get_model("auth", "Group")
    booking_permissions = (
        apps.get_model("auth", "Permission").objects.using(using).filter(content_type__app_label="booking")
    )
    for name, codenames in GROUPS.items():
        group, _ = group_model.objects.using(using).get_or_create(name=name)
        chosen = (
            booking_permissions
            if codenames == EVERY_BOOKING_PERMISSION
            else booking_permissions.filter(codename__in=codenames)
        )
        group.permissions.add(*chosen)
