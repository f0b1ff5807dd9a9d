# The staff pages' permissions for gift vouchers (booking/control/vouchers.py): no table; the
# groups get them (booking/control/groups.py).

from django.db import migrations, models

from booking.control.groups import create_groups


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("booking", "0012_subscriptions"),
    ]

    operations = [
        migrations.CreateModel(
            name="GiftVoucher",
            fields=[
                ("id", models.CharField(max_length=24, primary_key=True, serialize=False)),
                ("label", models.CharField(max_length=200)),
            ],
            options={
                "verbose_name": "gift voucher",
                "db_table": "mongodb_vouchers",
                "managed": False,
            },
        ),
        migrations.RunPython(create_groups, migrations.RunPython.noop),
    ]
