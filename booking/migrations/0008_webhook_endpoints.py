# The staff pages' permissions for webhook endpoints (booking/control/webhooks.py): no table.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
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
    ]
