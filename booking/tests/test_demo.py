from booking import demo, mongo, selectors


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
