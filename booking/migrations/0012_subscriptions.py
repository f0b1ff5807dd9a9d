# Season subscriptions: a stand-in model for their staff pages' permissions (booking/models.py),
# granted to the ready-made groups.

from django.db import migrations, models

from booking.control.groups import create_groups


class Migration(migrations.Migration):
    dependencies = [
        ("booking", "0011_tillclosing"),
    ]

    operations = [
        migrations.CreateModel(
            name="Subscription",
            fields=[
                ("id", models.CharField(max_length=24, primary_key=True, serialize=False)),
                ("label", models.CharField(max_length=200)),
            ],
            options={
                "verbose_name": "subscription",
                "db_table": "mongodb_subscriptions",
                "managed": False,
                "default_permissions": ("view", "add", "change"),
            },
        ),
        migrations.RunPython(create_groups, migrations.RunPython.noop),  # the Manager gets them
    ]
