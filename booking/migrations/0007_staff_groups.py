# The admin index's entries for the counter and the door, and the ready-made staff groups
# (booking/control/groups.py; README, "Staff accounts and groups").

from django.db import migrations

from booking.control.groups import create_groups


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("booking", "0006_report_permission"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="boxoffice",
            options={
                "default_permissions": (),
                "managed": False,
                "permissions": [("sell_at_counter", "Can sell tickets at the counter and on the phone")],
                "verbose_name": "box office",
                "verbose_name_plural": "box office",
            },
        ),
        migrations.AlterModelOptions(
            name="doorcheckin",
            options={
                "default_permissions": (),
                "managed": False,
                "permissions": [("checkin_tickets", "Can check in tickets at the door")],
                "verbose_name": "door check-in",
                "verbose_name_plural": "door check-in",
            },
        ),
        # Existing groups of these names keep what they have and get what is listed.
        migrations.RunPython(create_groups, migrations.RunPython.noop),
    ]
