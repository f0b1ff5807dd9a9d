from booking.core import mongo
from booking.sales import demo, selectors


def test_demo_data_is_created_once_with_halls_of_different_shapes_and_a_stadium():
    assert demo.seed() is True
    assert demo.seed() is False
    halls = {t["name"]: t for t in mongo.theaters().find()}
    assert {"Grand Hall", "Studio Stage", "Riverside Stadium"} <= set(halls)
    studio_rows = halls["Studio Stage"]["layout"]["rows"]
    assert any(cell is None for row in studio_rows for cell in row["cells"])  # aisles
    seats_per_row = {sum(cell is not None for cell in row["cells"]) for row in studio_rows}
    assert len(seats_per_row) > 1  # uneven rows
    assert halls["Riverside Stadium"]["seatCount"] == 100_000
    names = [s["name"] for s in selectors.upcoming_sessions()]
    assert len(names) == len(demo.SHOWS) + 1 and "Cup Final" in names


def test_the_demo_reads_in_german_on_a_german_page(client):
    """The demo theater is a German Stadttheater: its shows and seat categories have German names
    (the staff's second language fields), shown on German pages; English pages keep the English."""
    demo.seed()
    german = client.get("/", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "Die Zauberflöte" in german and "Warten auf Godot" in german and "Pokalfinale" in german
    assert "The Magic Flute" not in german and "Cup Final" not in german
    english = client.get("/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "The Magic Flute" in english and "Die Zauberflöte" not in english
    grand = next(s for s in selectors.upcoming_sessions() if s["name"] == "The Magic Flute")
    legend = client.get(f"/sessions/{grand['_id']}/", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "Hinteres Parkett <strong>" in legend and "Back stalls" not in legend


def test_the_demo_sells_ticket_types_named_in_german_on_german_pages(client):
    """The demo halls offer concessions, children's and companion tickets, each with a German name
    (and the concession its condition), priced in every demo performance."""
    demo.seed()
    for hall in mongo.theaters().find({"name": {"$in": ["Grand Hall", "Studio Stage"]}}):
        types = hall["ticketTypes"]
        assert len(types) > 2 and all(t.get("nameDe") for t in types)
        assert any(t.get("descriptionDe") for t in types) and any(t.get("companion") for t in types)
    listed = next(s for s in selectors.upcoming_sessions() if s["name"] == "The Magic Flute")
    flute = mongo.sessions().find_one({"_id": listed["_id"]})
    assert flute["typePrices"]
    row, cell = next(
        (r, c)
        for r, line in enumerate(flute["layout"]["rows"])
        for c, seat in enumerate(line["cells"])
        if seat and seat["cat"] == "s"
    )
    assert client.post(f"/sessions/{flute['_id']}/hold", {"seats": f"{row}:{cell}"}).status_code in (200, 302)
    cart = client.get("/cart/", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "Normalpreis –" in cart and "Ermäßigt –" in cart and "Concession" not in cart
