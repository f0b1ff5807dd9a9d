# The staff site names its models in the staff member's language (sidebar, breadcrumbs, titles): no
# table changes; the groups are granted again, as after every migration that touches permissions.

from django.db import migrations

from booking.control.groups import create_groups


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("booking", "0013_gift_vouchers"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="apitoken",
            options={
                "default_permissions": ("view", "add", "change"),
                "managed": False,
                "verbose_name": "API token",
                "verbose_name_plural": "API tokens",
            },
        ),
        migrations.AlterModelOptions(
            name="cart",
            options={"managed": False, "verbose_name": "cart", "verbose_name_plural": "carts"},
        ),
        migrations.AlterModelOptions(
            name="giftvoucher",
            options={"managed": False, "verbose_name": "gift voucher", "verbose_name_plural": "gift vouchers"},
        ),
        migrations.AlterModelOptions(
            name="order",
            options={"managed": False, "verbose_name": "order", "verbose_name_plural": "orders"},
        ),
        migrations.AlterModelOptions(
            name="promocode",
            options={"managed": False, "verbose_name": "promo code", "verbose_name_plural": "promo codes"},
        ),
        migrations.AlterModelOptions(
            name="report",
            options={
                "default_permissions": (),
                "managed": False,
                "permissions": [("view_reports", "Can view sales reports, exports and attendee lists")],
                "verbose_name": "sales report",
                "verbose_name_plural": "sales reports",
            },
        ),
        migrations.AlterModelOptions(
            name="session",
            options={"managed": False, "verbose_name": "session", "verbose_name_plural": "sessions"},
        ),
        migrations.AlterModelOptions(
            name="subscription",
            options={
                "default_permissions": ("view", "add", "change"),
                "managed": False,
                "verbose_name": "subscription",
                "verbose_name_plural": "subscriptions",
            },
        ),
        migrations.AlterModelOptions(
            name="theater",
            options={"managed": False, "verbose_name": "theater", "verbose_name_plural": "theaters"},
        ),
        migrations.AlterModelOptions(
            name="waitingroom",
            options={"managed": False, "verbose_name": "waiting room", "verbose_name_plural": "waiting rooms"},
        ),
        migrations.AlterModelOptions(
            name="webhookendpoint",
            options={"managed": False, "verbose_name": "webhook endpoint", "verbose_name_plural": "webhook endpoints"},
        ),
        migrations.RunPython(create_groups, migrations.RunPython.noop),
    ]
