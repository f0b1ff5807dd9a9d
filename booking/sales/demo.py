"""Demo data: two halls of different shapes, a week of performances, and a 100,000-seat stadium."""

from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

from django.conf import settings

from booking.core import clock, mongo
from booking.sales import demo_stadium, offers
from booking.sales.sessions import create_session
from booking.venues.layouts import parse_grid
from booking.venues.theaters import create_theater

GRAND_CATEGORIES = [
    {"code": "p", "name": "Premium", "color": "#a855f7"},
    {"code": "s", "name": "Stalls", "nameDe": "Parkett", "color": "#3b82f6"},
    {"code": "b", "name": "Back stalls", "nameDe": "Hinteres Parkett", "color": "#10b981"},
]
# Both halls' ticket types (sales/offers.py), with the German names and conditions German pages,
# tickets and mails show; the companion ticket only beside a wheelchair space.
TICKET_TYPES: list[dict] = [
    {"code": "full", "name": "Full price", "nameDe": "Normalpreis"},
    {
        "code": "concession",
        "name": "Concession",
        "nameDe": "Ermäßigt",
        "description": "Students, trainees and seniors 65+: show your ID at the door",
        "descriptionDe": "Studierende, Auszubildende und Senioren ab 65: Ausweis am Einlass zeigen",
    },
    {
        "code": "child",
        "name": "Child (under 14)",
        "nameDe": "Kind (unter 14)",
        "description": "Under 14 on the day of the performance",
        "descriptionDe": "Am Tag der Vorstellung unter 14 Jahre alt",
    },
    {
        "code": "companion",
        "name": "Companion",
        "nameDe": "Begleitperson",
        "description": "For the companion of a wheelchair user in the same booking",
        "descriptionDe": "Für die Begleitperson einer Person im Rollstuhl in derselben Buchung",
        "companion": True,
    },
]
STUDIO_CATEGORIES = [
    {"code": "s", "name": "Standard", "color": "#3b82f6"},
    {"code": "r", "name": "Reduced view", "nameDe": "Eingeschränkte Sicht", "color": "#f59e0b"},
]


def grand_hall_grid() -> str:
    """A 900-seat proscenium hall: 20 rows widening towards the back, two aisles."""
    lines = []
    for i in range(20):
        label = "ABCDEFGHJKLMNOPQRSTU"[i]
        side = 9 + min(i, 8) // 2  # side blocks grow from 9 to 13 seats
        middle = 14 + min(i, 10) // 2
        cat = "p" if 3 <= i <= 9 else ("s" if i < 14 else "b")
        side_cat = "s" if i < 14 else "b"
        pad = "." * (13 - side)
        left = pad + side_cat * side
        right = side_cat * side + pad
        mid = cat * middle
        mid_pad = "." * ((19 - middle) // 2)
        mid = mid_pad + mid + "." * (19 - middle - len(mid_pad))
        if i == 19:  # wheelchair spaces with companion seats at the back
            left = pad + "B" + side_cat * (side - 1)
            right = side_cat * (side - 1) + "B" + pad
        lines.append(f"{label}: {left}..{mid}..{right}")
    return "\n".join(lines)


STUDIO_GRID = """\
A: ...ssss.ssss...
B: ..sssss.sssss..
C: .ssssss.ssssss.
D: sssssss.sssssss
E: ssrssss.ssssrss
F: Srrr.ss.ss.rrrS
G: rrrrrrr.rrrrrrr
"""

SHOWS = [
    ("Hamlet", "Shakespeare's tragedy in a sharp new staging.", "grand", time(19, 30), 150),
    ("The Magic Flute", "Mozart's opera for all ages, sung in English.", "grand", time(19, 0), 170),
    ("Waiting for Godot", "Two tramps, one tree, and an evening that never ends.", "studio", time(20, 0), 120),
    ("Hamlet", "Shakespeare's tragedy in a sharp new staging.", "grand", time(15, 0), 150),
    ("Improv Night", "Our ensemble makes it up as they go, with your suggestions.", "studio", time(21, 0), 90),
    ("The Magic Flute", "Mozart's opera for all ages, sung in English.", "grand", time(19, 0), 170),
]
# The shows' German title and description (the staff's second language fields, sales/sessions.py).
SHOWS_DE = {
    "Hamlet": ("Hamlet", "Shakespeares Tragödie in einer scharfen neuen Inszenierung."),
    "The Magic Flute": ("Die Zauberflöte", "Mozarts Oper für alle Generationen, auf Englisch gesungen."),
    "Waiting for Godot": ("Warten auf Godot", "Zwei Landstreicher, ein Baum und ein Abend, der nie endet."),
    "Improv Night": ("Improtheater", "Unser Ensemble erfindet alles aus dem Stegreif – mit Ihren Vorschlägen."),
}


def seed(force: bool = False) -> bool:
    """Create the demo halls and sessions; does nothing if demo data exists (unless force)."""
    # the few theaters, read whole on purpose (hinted: an index scan, as notablescan wants it)
    demo_ids = [t["_id"] for t in mongo.theaters().find({"demo": True}, {"_id": 1}, hint=[("_id", 1)])]
    if demo_ids and not force:
        return False
    if force:
        demo_performances = mongo.sessions().distinct("performanceId", {"theaterId": {"$in": demo_ids}})
        mongo.sessions().delete_many({"theaterId": {"$in": demo_ids}})
        mongo.listings().delete_many({"theaterId": {"$in": demo_ids}})
        mongo.performances().delete_many({"_id": {"$in": demo_performances}})
        mongo.theaters().delete_many({"_id": {"$in": demo_ids}})
    grand = create_theater("Grand Hall", parse_grid(grand_hall_grid(), GRAND_CATEGORIES), name_de="Großes Haus")
    studio = create_theater("Studio Stage", parse_grid(STUDIO_GRID, STUDIO_CATEGORIES), name_de="Studiobühne")
    stadium = demo_stadium.create_stadium()  # 100,000 seats in 100 sections: the big-venue path
    demo_stadium.create_match(stadium)
    mongo.theaters().update_many(
        {"_id": {"$in": [grand["_id"], studio["_id"], stadium["_id"]]}}, {"$set": {"demo": True}}
    )
    for ticketed in (grand, studio):
        offers.set_theater_ticket_types(ticketed["_id"], TICKET_TYPES)
    halls = {"grand": (grand, {"p": 5500, "s": 3900, "b": 2500}), "studio": (studio, {"s": 2200, "r": 1500})}
    tz = ZoneInfo(settings.TIME_ZONE)
    today = clock.now().astimezone(tz).date()
    for day, (name, description, hall, at, minutes) in enumerate(SHOWS, start=1):
        theater, prices = halls[hall]
        start = datetime.combine(today + timedelta(days=day // 2 + 1), at, tzinfo=tz)
        name_de, description_de = SHOWS_DE[name]
        session = create_session(
            theater["_id"],
            published=True,
            name=name,
            description=description,
            start=start,
            end=start + timedelta(minutes=minutes),
            prices=prices,
            name_de=name_de,
            description_de=description_de,
        )
        offers.set_price_table(session["_id"], prices, reduced_prices(prices))
    return True


def reduced_prices(prices: dict[str, int]) -> dict[str, dict[str, int]]:
    """The demo's other columns of the price table: concessions about 60 % of the full price,
    children half, companions free, rounded to whole euros."""
    return {
        "concession": {cat: round(cents * 0.6 / 100) * 100 for cat, cents in prices.items()},
        "child": {cat: round(cents * 0.5 / 100) * 100 for cat, cents in prices.items()},
        "companion": {cat: 0 for cat in prices},
    }
