"""The seat map renderer: what each seat says, the per-viewer overlay, the cache, and its speed."""

import re
import time
from collections.abc import Mapping
from typing import Any

import pytest
from django.template import Context, Engine

from booking.sales import holds
from booking.sales.demo import GRAND_CATEGORIES
from booking.tests.commands import counting_commands
from booking.tests.factories import make_session, make_theater, reread
from booking.venues.layouts import parse_grid
from booking.venues.theaters import create_theater
from booking.web import seatmap_html


def buttons(html):
    return re.findall(r"<button [^>]*>[^<]*</button>", html)


def test_every_seat_is_a_labelled_button_and_gaps_and_rows_are_kept():
    session = make_session()
    built = seatmap_html.build_seat_map(session)
    html = built.for_viewer()
    assert len(buttons(html)) == session["seatsTotal"] == 24
    assert html.count('<i class="g"></i>') == 3  # the aisle in each row
    assert html.count('<span class="rl" aria-hidden="true">B</span>') == 2  # both sides
    assert (
        '<button class="s c-p" name="seat" value="1:2" id="s1-2" aria-label="Row B, seat 3, Premium, €35, available">'
        "3</button>" in html
    )
    assert built.width == 9


def test_states_and_the_viewers_own_seats():
    session: Mapping[str, Any] = make_session()
    mine = holds.hold_seats(session["_id"], "s:me", None, ["0:0", "0:1"])
    holds.hold_seats(session["_id"], "s:other", None, ["2:0"])
    session = reread(session["_id"])
    shared = seatmap_html.seat_map_html(session)
    for_me = shared.for_viewer({"0:0", "0:1"}, picked={"0:0"})
    for_them = shared.for_viewer()
    assert "Row A, seat 1, Stalls, €20, held by you" in for_me
    assert 'class="s me pk c-s"' in for_me  # just picked: highlighted
    assert "Row C, seat 1, Stalls, €20, held by someone else" in for_me
    assert "held by you" not in for_them
    assert for_them.count('aria-disabled="true"') == 3
    assert mine.cart_id  # the hold went through the engine
    # A key the viewer thinks is theirs but the map does not show as held changes nothing.
    assert shared.for_viewer({"1:1"}) == for_them


def test_wheelchair_and_companion_seats_are_marked():
    layout = parse_grid("A: sSs.sss", [{"code": "s", "name": "Stalls"}])
    theater = create_theater("Small", layout)
    session = make_session(theater, prices={"s": 1250})
    html = seatmap_html.build_seat_map(session).for_viewer()
    assert "Row A, seat 2, Stalls, €12.50, wheelchair space, available" in html
    assert "Row A, seat 1, Stalls, €12.50, companion seat, available" in html
    assert ">♿</button>" in html


def test_names_are_escaped_once_each():
    theater = make_theater(categories=[{"code": "s", "name": "<b>Stalls</b>"}, {"code": "p", "name": "P & Q"}])
    html = seatmap_html.build_seat_map(make_session(theater)).for_viewer()
    assert "<b>" not in html
    assert "&lt;b&gt;Stalls&lt;/b&gt;" in html and "P &amp; Q" in html


def test_cache_is_per_session_version():
    seatmap_html.clear_cache()
    session = make_session()
    first = seatmap_html.seat_map_html(session)
    assert seatmap_html.seat_map_html(reread(session["_id"])) is first
    holds.hold_seats(session["_id"], "s:x", None, ["0:0"])
    again = seatmap_html.seat_map_html(reread(session["_id"]))
    assert again is not first and again.version == session["version"] + 1


def test_a_new_version_rebuilds_only_the_rows_that_changed():
    seatmap_html.clear_cache()
    session = make_session()
    seatmap_html.seat_map_html(session)
    built_before = seatmap_html.stats["rows_built"]
    holds.hold_seats(session["_id"], "s:x", None, ["1:0", "1:1"])
    changed = reread(session["_id"])
    shared = seatmap_html.seat_map_html(changed)
    assert seatmap_html.stats["rows_built"] - built_before == 1  # row B only; rows A and C reused
    # the reused rows make exactly the map a fresh build makes, overlay included
    fresh = seatmap_html.build_seat_map(changed)
    assert shared.for_viewer() == fresh.for_viewer()
    assert shared.for_viewer({"1:0"}, picked={"1:0"}) == fresh.for_viewer({"1:0"}, picked={"1:0"})
    assert "Row B, seat 1, Stalls, €20, held by you" in shared.for_viewer({"1:0"})
    # a different layout (the seat map refreshed before the sale) is never served from old rows
    renamed = {
        **changed,
        "version": changed["version"] + 1,
        "layout": {
            **changed["layout"],
            "rows": [{**row, "label": row["label"] + "x"} for row in changed["layout"]["rows"]],
        },
    }
    assert "Row Ax, seat 1" in seatmap_html.seat_map_html(renamed).for_viewer()


NAIVE_TEMPLATE = """{% load booking_tags %}{% for row in rows %}<div class="r"><span class="rl">{{ row.label }}</span>
{% for cell in row.cells %}{% if cell.seat %}
<button class="s c-{{ cell.seat.cat }}{% if cell.state == 1 %} h{% endif %}"
 name="seat" value="{{ cell.key }}" id="s{{ cell.key }}"
 aria-label="Row {{ row.label }}, seat {{ cell.seat.label }}, {{ cell.category }}, {{ cell.price|money }},
 {{ cell.word }}">{{ cell.seat.label }}</button>{% else %}<i class="g"></i>{% endif %}{% endfor %}
<span class="rl">{{ row.label }}</span></div>{% endfor %}"""


def naive_render(session, engine):
    names = {c["code"]: c["name"] for c in session["layout"]["categories"]}
    rows = []
    for r, row in enumerate(session["layout"]["rows"]):
        cells = []
        for c, cell in enumerate(row["cells"]):
            state = session["seats"][r][c]
            cells.append(
                {
                    "seat": cell,
                    "state": state,
                    "key": f"{r}:{c}",
                    "category": names[cell["cat"]] if cell else "",
                    "price": session["prices"][cell["cat"]] if cell else 0,
                    "word": "available" if state == 0 else "taken",
                }
            )
        rows.append({"label": row["label"], "cells": cells})
    return engine.from_string(NAIVE_TEMPLATE).render(Context({"rows": rows}))


def best_of(*fns, runs=7) -> list[float]:
    """The least CPU time of this thread for each of ``fns`` over ``runs`` rounds, the functions
    taking turns in each round: other processes on a busy machine (the suite's other workers, a
    browser) take wall time from it, and slow its instructions too (shared caches and cores), so
    the ones compared are measured side by side, not one after the other."""
    best = [float("inf")] * len(fns)
    for _ in range(runs):
        for i, fn in enumerate(fns):
            start = time.thread_time()
            fn()
            best[i] = min(best[i], time.thread_time() - start)
    return best


def test_900_seat_map_renders_more_than_20x_faster_than_a_template_loop():
    grid = "\n".join(("p" if i < 10 else "s") * 15 + ".." + "s" * 15 for i in range(30))
    theater = create_theater("Big Hall", parse_grid(grid, GRAND_CATEGORIES))
    session: Mapping[str, Any] = make_session(theater, prices={"p": 5500, "s": 3900})
    assert session["seatsTotal"] == 900
    holds.hold_seats(session["_id"], "s:me", None, ["10:20", "10:21"])
    session = reread(session["_id"])
    engine = Engine(libraries={"booking_tags": "booking.templatetags.booking_tags"})
    seatmap_html.seat_map_html(session)  # kept for the warm rounds (build_seat_map keeps nothing)
    naive, cold, warm = best_of(
        lambda: naive_render(session, engine),
        lambda: seatmap_html.build_seat_map(session).for_viewer({"10:20", "10:21"}),
        lambda: seatmap_html.seat_map_html(session).for_viewer({"10:20", "10:21"}),
    )
    print(f"900 seats: template loop {naive * 1e3:.1f} ms, first {cold * 1e3:.2f} ms, cached {warm * 1e3:.3f} ms")
    assert naive / warm > 20, (naive, warm)
    # Even the first viewer of a new version is quick: 3.7x alone, 2.2-2.5x in a worker of a busy
    # full run; a cold build costing half the template loop would be a regression.
    assert naive / cold > 2, (naive, cold)


@pytest.mark.django_db
def test_seat_map_page_reads_the_small_part_when_its_map_is_built_and_shows_the_same(client, settings):
    settings.BOOKING_HOLD_RATE = ""
    seatmap_html.clear_cache()
    session = make_session()
    page = f"/sessions/{session['_id']}/"
    with counting_commands() as counter:
        first = client.get(page).content.decode()  # a new version here: the full document as well
    assert counter.commands == [("find", "sessions"), ("find", "sessions")]
    with counting_commands() as counter:
        again = client.get(page).content.decode()
    assert counter.commands == [("find", "sessions")]  # Q2: one read by _id
    assert again == first.replace(csrf(first), csrf(again))
    assert "Premium <strong>€35</strong>" in again  # the legend needs only the layout's categories


@pytest.mark.django_db
def test_a_hold_answers_from_its_own_writes_without_reading_again(client, settings):
    settings.BOOKING_HOLD_RATE = ""
    settings.BOOKING_MAX_HELD_SEATS_PER_CLIENT = 0  # its reservation before the writes: the next test
    session = make_session()
    hold_url = f"/sessions/{session['_id']}/hold"
    client.post(hold_url, {"seats": "0:0"}, HTTP_HX_REQUEST="true")
    with counting_commands() as counter:
        answer = client.post(hold_url, {"seats": "0:1"}, HTTP_HX_REQUEST="true")
    assert counter.writes == [("findAndModify", "sessions"), ("findAndModify", "carts")]
    assert counter.commands[-1] == ("findAndModify", "carts")  # nothing read after the writes
    html = answer.content.decode()
    assert len(buttons(html)) == 1  # only the seat that changed, swapped by its id
    assert 'class="s me pk c-s" name="seat" value="0:1" id="s0-1"' in html  # just picked
    assert "Total (2 seats)" in html and "€40" in html
    # what a fresh read renders is what the hold answered with, at the version it named
    seatmap_html.clear_cache()
    fresh = client.get(f"/sessions/{session['_id']}/map/")
    assert fresh["ETag"] == f'"{answer["X-Seatmap-Version"]}"'
    answered = buttons(html)[0].replace(" pk", "").replace(' hx-swap-oob="true"', "")
    assert answered in buttons(fresh.content.decode())


@pytest.mark.django_db
def test_with_the_per_client_limit_a_hold_reserves_on_the_addresss_document_first(client, settings):
    settings.BOOKING_HOLD_RATE = ""
    settings.BOOKING_MAX_HELD_SEATS_PER_CLIENT = 40
    session = make_session()
    hold_url = f"/sessions/{session['_id']}/hold"
    client.post(hold_url, {"seats": "0:0"}, HTTP_HX_REQUEST="true")
    with counting_commands() as counter:
        client.post(hold_url, {"seats": "0:1"}, HTTP_HX_REQUEST="true")
    # the limit under concurrency: reserved before the seats are taken (docs/reliability.md); the
    # cart is read by the write that would take seats its releases left counted (none yet)
    assert counter.writes == [
        ("findAndModify", "carts"),
        ("findAndModify", "client_holds"),
        ("findAndModify", "sessions"),
        ("findAndModify", "carts"),
    ]
    assert counter.commands[-1] == ("findAndModify", "carts")  # nothing read after the writes


@pytest.mark.django_db
def test_a_release_answers_with_the_freed_seats_and_the_cart(client, settings):
    settings.BOOKING_HOLD_RATE = ""
    session = make_session()
    base = f"/sessions/{session['_id']}"
    client.post(f"{base}/hold", {"seats": "0:0,0:1"}, HTTP_HX_REQUEST="true")
    with counting_commands() as counter:
        answer = client.post(f"{base}/release", {"seats": "0:1"}, HTTP_HX_REQUEST="true")
    # the seat freed in the session, then the cart, which keeps it counted for the address (the
    # per-client limit) as one of its unreturned seats: the address's document is not written
    assert counter.writes == [("findAndModify", "sessions"), ("findAndModify", "carts")]
    html = answer.content.decode()
    assert buttons(html) == [
        '<button class="s c-s" name="seat" value="0:1" id="s0-1" aria-label="Row A, seat 2, Stalls, €20, available"'
        ' hx-swap-oob="true">2</button>'
    ]
    assert "Total (1 seat)" in html
    fresh = client.get(f"{base}/map/")
    assert fresh["ETag"] == f'"{answer["X-Seatmap-Version"]}"'


def csrf(html):
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)


@pytest.mark.django_db
def test_the_page_shared_by_viewers_without_a_cart_carries_their_own_csrf_token_and_never_anothers_seats(settings):
    from django.test import Client

    settings.BOOKING_HOLD_RATE = ""
    seatmap_html.clear_cache()
    session = make_session()
    page = f"/sessions/{session['_id']}/"
    first, second, buyer = (Client(enforce_csrf_checks=True) for _ in range(3))
    first.get(page)
    shared = second.get(page).content.decode()  # from the shared page
    assert seatmap_html.CSRF_MARKER not in shared
    token = csrf(shared)
    assert f'"X-CSRFToken": "{token}"' in shared
    held = second.post(
        f"/sessions/{session['_id']}/hold", {"seats": "0:0", "csrfmiddlewaretoken": token}, HTTP_HX_REQUEST="true"
    )
    assert held.status_code == 200  # the shared page's token is this viewer's own
    buyer.get(page)
    token = csrf(buyer.get(page).content.decode())
    buyer.post(f"/sessions/{session['_id']}/hold", {"seats": "1:0", "csrfmiddlewaretoken": token})  # plain post
    with_cart = buyer.get(page).content.decode()  # a message and a cart: their own page
    assert "Row B, seat 1, Stalls, €20, held by you" in with_cart and "Total (1 seat)" in with_cart
    for viewer in (first, Client()):
        other = viewer.get(page).content.decode()
        assert "held by you" not in other and "Total (" not in other
        assert "Row B, seat 1, Stalls, €20, held by someone else" in other
