# The till closings' stand-in model (booking/control/tills.py); the groups granted again after it.

from django.db import migrations, models

from booking.control.groups import create_groups


class Migration(migrations.Migration):
    dependencies = [
        ("booking", "0017_manager_api_tokens"),
    ]

    operations = [
        migrations.CreateModel(
            name="TillClosing",
            fields=[
                ("id", models.CharField(max_length=24, primary_key=True, serialize=False)),
                ("label", models.CharField(max_length=200)),
            ],
            options={
                "verbose_name": "till closing",
                "verbose_name_plural": "till closings",
                "db_table": "mongodb_till_closings",
                "managed": False,
                "default_permissions": (),
            },
        ),
        migrations.RunPython(create_groups, migrations.RunPython.noop),
    ]
