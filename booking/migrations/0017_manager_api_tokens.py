# The "Manager" group gets the API tokens' permissions (0009 made them after the groups).

from django.db import migrations

from booking.control.groups import create_groups


class Migration(migrations.Migration):
    dependencies = [
        ("booking", "0009_api_tokens"),
    ]

    operations = [
        migrations.RunPython(create_groups, migrations.RunPython.noop),
    ]
