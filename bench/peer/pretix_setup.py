"""Runs inside pretix's venv (never ours): seeds the organizer and the seated events.

stdin: JSON {"events": [{"slug", "name", "days", "categories": [{"code", "name", "color", "price"}],
"rows": [{"label", "cells": [null | {"label", "cat"}]}]}]} (our layouts, bench/peer/halls.py).
stdout, last line: JSON {"organizer", "events": {slug: {"items": {code: item id}, "seats": {guid: code}}}}.

A seat's guid is our seat key "row:col", so both systems are asked for the same seats.
"""

import json
import os
import sys
from datetime import timedelta
from decimal import Decimal

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pretix.settings")
django.setup()

from django.utils.timezone import now  # noqa: E402
from django_scopes import scopes_disabled  # noqa: E402
from pretix.base.models import Event, Item, Organizer, Quota, SeatCategoryMapping, SeatingPlan  # noqa: E402
from pretix.base.services.seating import generate_seats  # noqa: E402

CELL = 30  # px between seats in the plan


def plan_layout(name: str, spec: dict) -> dict:
    """pretix's seating-plan JSON (static/seating/seating-plan.schema.json) for our grid."""
    rows = []
    width = 0
    for r, row in enumerate(spec["rows"]):
        seats = []
        for c, cell in enumerate(row["cells"]):
            if cell is None:
                continue
            seats.append(
                {
                    "seat_guid": f"{r}:{c}",
                    "seat_number": cell["label"],
                    "position": {"x": c * CELL, "y": 0},
                    "category": cell["cat"],
                }
            )
        width = max(width, len(row["cells"]) * CELL)
        rows.append(
            {
                "row_number": row["label"],
                "row_label": "Row %s",
                "seat_label": "Seat %s",
                "position": {"x": 0, "y": r * CELL},
                "seats": seats,
            }
        )
    return {
        "name": name,
        "categories": [{"name": c["code"], "color": c["color"]} for c in spec["categories"]],
        "zones": [{"name": "Hall", "zone_id": "hall", "position": {"x": 0, "y": 0}, "rows": rows, "areas": []}],
        "size": {"width": width + CELL, "height": (len(rows) + 1) * CELL},
    }


def make_event(organizer, spec: dict) -> dict:
    start = now() + timedelta(days=spec["days"])
    event = Event.objects.create(
        organizer=organizer,
        name=spec["name"],
        slug=spec["slug"],
        date_from=start,
        date_to=start + timedelta(hours=2),
        currency="EUR",
        live=True,
        plugins="pretix.plugins.manualpayment,pretix.plugins.ticketoutputpdf",
    )
    event.settings.set("payment_manual__enabled", True)
    event.settings.set("payment_manual_public_name", "Pay at the box office")
    event.settings.set("seating_choice", True)
    event.settings.set("attendee_names_asked", False)
    event.settings.set("invoice_address_asked", False)
    event.settings.set("order_email_asked_twice", False)
    event.settings.set("max_items_per_order", 10)
    event.settings.set("reservation_time", 30)
    quota = Quota.objects.create(event=event, name="Hall", size=None)
    items = {}
    for position, cat in enumerate(spec["categories"]):
        item = Item.objects.create(
            event=event,
            name=cat["name"],
            default_price=Decimal(cat["price"]) / 100,
            admission=True,
            active=True,
            position=position,
        )
        quota.items.add(item)
        items[cat["code"]] = item
    plan = SeatingPlan.objects.create(
        organizer=organizer, name=spec["name"], layout=json.dumps(plan_layout(spec["name"], spec))
    )
    event.seating_plan = plan
    event.save()
    for code, item in items.items():
        SeatCategoryMapping.objects.create(event=event, layout_category=code, product=item)
    generate_seats(event, None, plan, items)
    seats = {s.seat_guid: s.product.pk for s in event.seats.all()}
    return {"items": {code: item.pk for code, item in items.items()}, "seats": seats, "count": len(seats)}


def main() -> None:
    spec = json.loads(sys.stdin.read())
    with scopes_disabled():
        organizer = Organizer.objects.create(name="Bench Theater", slug="bench")
        events = {ev["slug"]: make_event(organizer, ev) for ev in spec["events"]}
    print(json.dumps({"organizer": organizer.slug, "events": events}))


if __name__ == "__main__":
    main()
