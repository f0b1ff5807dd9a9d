# The staff pages' permissions for webhook endpoints (booking/control/webhooks.py): no table;
# the "Manager" group gets them (booking/control/groups.py).

from django.db import migrations, models

from booking.control.groups import create_groups


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("booking", "0007_staff_groups"),
    ]

    operations = [
        migrations.CreateModel(
            name="WebhookEndpoint",
            fields=[
                ("id", models.CharField(max_length=24, primary_key=True, serialize=False)),
                ("label", models.CharField(max_length=200)),
            ],
            options={
                "verbose_name": "webhook endpoint",
                "db_table": "mongodb_webhook_endpoints",
                "managed": False,
            },
        ),
        migrations.RunPython(create_groups, migrations.RunPython.noop),
    ]
