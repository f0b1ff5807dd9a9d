# The REST API's tokens: a stand-in model for their staff page's permissions (booking/models.py).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("booking", "0008_webhook_endpoints"),
    ]

    operations = [
        migrations.CreateModel(
            name="ApiToken",
            fields=[
                ("id", models.CharField(max_length=24, primary_key=True, serialize=False)),
                ("label", models.CharField(max_length=200)),
            ],
            options={
                "verbose_name": "API token",
                "db_table": "mongodb_api_tokens",
                "managed": False,
                "default_permissions": ("view", "add", "change"),
            },
        ),
    ]
