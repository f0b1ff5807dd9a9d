"""The waiting room through Django's test client: the queue page and its poll, the session page's
redirect, the seat actions' 403 without admission, bad input (4xx, never 500), Redis away."""

import re
from datetime import UTC, timedelta

import pytest
from bson import ObjectId
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from booking.core import clock, mongo
from booking.presale import queue_panel
from booking.sales import admission, holds, selectors, waiting_room
from booking.tests.commands import counting_commands
from booking.tests.factories import make_session
from booking.tests.headers import HTMX
from booking.tests.ports import free_port
from booking.web import buyer

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_hold_rate_limit")]


def url(name, **kwargs):
    return reverse(f"booking:{name}", kwargs=kwargs)


def open_room(session=None, *, opens=-10, on_sale=-1, rate=600):
    """A queued session; times in minutes from now."""
    session = session or make_session()
    now = clock.now()
    config = waiting_room.enable(
        session["_id"],
        opens_at=now + timedelta(minutes=opens),
        on_sale_at=now + timedelta(minutes=on_sale),
        rate=rate,
    )
    return session, config


def queue_path(config):
    return url("queue", queue_id=str(config.queue_id))


def status_path(config):
    return url("queue_status", queue_id=str(config.queue_id))


def text(response):
    return re.sub(r"\s+", " ", response.content.decode())


def admitted_client(config) -> Client:
    """A buyer who went through the queue (rate high enough to be let in at once)."""
    client = Client()
    response = client.get(queue_path(config))
    assert response.status_code == 302, text(response)
    assert response["Location"] == url("session", session_id=str(config.queue_id))
    assert admission.cookie_name(config.queue_id) in response.cookies
    return client


# --- the queue page ---


def test_before_the_room_opens_the_page_counts_down_and_nobody_joins(client):
    session, config = open_room(opens=30, on_sale=60)
    page = client.get(queue_path(config))
    assert page.status_code == 200
    body = text(page)
    assert "The waiting room opens soon" in body
    assert re.search(r'class="wr-countdown" data-seconds="(1[78]\d\d)"', body)  # ~30 minutes
    assert waiting_room.stats(config).waiting == 0
    assert waiting_room.ticket_cookie_name(config.queue_id) not in page.cookies


def test_before_the_sale_the_buyer_waits_with_a_countdown_and_keeps_one_place(client):
    session, config = open_room(opens=-5, on_sale=45)
    page = client.get(queue_path(config))
    body = text(page)
    assert page.status_code == 200
    assert "You are in the waiting room" in body and "by lot" in body
    assert re.search(r'data-seconds="(2[67]\d\d)"', body)  # ~45 minutes, server time
    assert "1 person is waiting" in body
    assert page["Cache-Control"].startswith("max-age=0")
    ticket = page.cookies[waiting_room.ticket_cookie_name(config.queue_id)]
    assert ticket["httponly"] and ticket["samesite"] == "Lax"
    for _ in range(3):  # reloads and polls (a second tab shares the cookies)
        assert "1 person is waiting" in text(client.get(queue_path(config)))
        assert "1 person is waiting" in text(client.get(status_path(config), **HTMX))
    other = Client()
    other.get(queue_path(config))
    assert "2 people are waiting" in text(client.get(status_path(config), **HTMX))


def test_head_looks_without_taking_a_place(client):
    session, config = open_room(opens=-5, on_sale=45)
    assert client.head(queue_path(config)).status_code == 200
    assert waiting_room.stats(config).waiting == 0
    assert client.get(queue_path(config)).status_code == 200
    assert waiting_room.stats(config).waiting == 1


def test_the_poll_names_its_next_delay_and_is_only_the_panel(client):
    session, config = open_room(opens=-5, on_sale=45)
    client.get(queue_path(config))
    panel = client.get(status_path(config), **HTMX)
    body = text(panel)
    assert body.lstrip().startswith('<section id="wr-status"')
    assert "<html" not in body
    delay = float(re.search(r'hx-trigger="load delay:([\d.]+)s, wr-now"', body).group(1))
    assert 1 <= delay <= 25


def test_after_the_sale_the_buyer_sees_the_place_and_an_estimated_wait(client, settings):
    session, config = open_room(on_sale=-1, rate=2)
    Client().get(queue_path(config))  # the first buyer takes the first turn
    for _ in range(3):
        Client().get(queue_path(config))  # three more ahead
    page = text(client.get(queue_path(config)))
    assert "You are in line" in page
    assert re.search(r"<strong>4</strong> <span class=\"wr-of\">of 4</span>", page)
    assert "Estimated wait: <strong>about 2 minutes</strong>" in page  # 3 ahead at 2 a minute


def test_when_admitted_the_buyer_goes_to_the_seat_map_with_a_token_bound_to_them(client):
    session, config = open_room(rate=600)
    response = client.get(status_path(config), **HTMX)
    assert response.status_code == 200 and "HX-Redirect" not in response  # no buyer cookie yet: no join
    assert "Cookies are needed" in text(response)
    response = client.get(queue_path(config))
    assert response.status_code == 302 and response["Location"] == url("session", session_id=str(session["_id"]))
    morsel = response.cookies[admission.cookie_name(config.queue_id)]
    assert morsel["httponly"] and morsel["samesite"] == "Lax"
    assert 1190 <= int(morsel["max-age"]) <= 1200
    owner = buyer.get(response.wsgi_request).owner
    assert admission.verify(morsel.value, config.queue_id, owner)
    page = client.get(url("session", session_id=str(session["_id"])))
    assert page.status_code == 200
    assert "It's your turn." in text(page)
    # the queue page now sends an admitted buyer straight on (htmx: HX-Redirect)
    assert client.get(status_path(config), **HTMX)["HX-Redirect"] == url("session", session_id=str(session["_id"]))


def test_the_session_page_of_a_queued_sale_sends_a_buyer_without_admission_to_the_queue(client):
    session, config = open_room()
    response = client.get(url("session", session_id=str(session["_id"])))
    assert response.status_code == 302 and response["Location"] == queue_path(config)
    stolen = admitted_client(config).cookies[admission.cookie_name(config.queue_id)].value
    client.cookies[admission.cookie_name(config.queue_id)] = stolen  # another buyer's token
    client.get("/")  # (this buyer has a cookie of their own)
    response = client.get(url("session", session_id=str(session["_id"])))
    assert response.status_code == 302


def test_a_session_without_a_room_is_untouched_and_its_queue_url_leads_to_it(client):
    session = make_session()
    assert client.get(url("session", session_id=str(session["_id"]))).status_code == 200
    response = client.get(url("queue", queue_id=str(session["_id"])))
    assert response.status_code == 302
    assert response["Location"] == url("session", session_id=str(session["_id"])) + "?room=ended"


# --- seat actions on a queued sale ---


def test_holds_without_admission_are_refused_by_the_server_with_a_link_to_the_queue(client):
    session, config = open_room()
    sid = str(session["_id"])
    client.get("/")
    for name, data in [("toggle_seat", {"seat": "0:0"}), ("hold", {"seats": "0:0"}), ("best_available", {"count": 2})]:
        response = client.post(url(name, session_id=sid), data, **HTMX)
        assert response.status_code == 403, name
        body = text(response)
        assert 'id="notice"' in body and "waiting room" in body
        assert f'href="{queue_path(config)}"' in body
        plain = client.post(url(name, session_id=sid), data)
        assert plain.status_code == 403 and f'href="{queue_path(config)}"' in text(plain)
    assert selectors.get_session(session["_id"])["seats"][0][0] == 0


def test_a_german_buyer_is_sent_to_the_waiting_room_in_german():
    session, config = open_room()
    german = Client(HTTP_ACCEPT_LANGUAGE="de")
    german.get("/")
    response = german.post(url("toggle_seat", session_id=str(session["_id"])), {"seat": "0:0"}, **HTMX)
    assert response.status_code == 403
    assert f'<a href="{queue_path(config)}">Zum Warteraum</a>' in text(response)
    assert "Go to the waiting room" not in text(response)


def test_an_admitted_buyer_holds_and_another_with_a_copied_token_does_not(client):
    session, config = open_room()
    buyer_a = admitted_client(config)
    sid = str(session["_id"])
    held = buyer_a.post(url("toggle_seat", session_id=sid), {"seat": "0:0"}, **HTMX)
    assert held.status_code == 200 and "held by you" in text(held)
    copier = Client()
    copier.get("/")
    name = admission.cookie_name(config.queue_id)
    copier.cookies[name] = buyer_a.cookies[name].value
    refused = copier.post(url("toggle_seat", session_id=sid), {"seat": "0:1"}, **HTMX)
    assert refused.status_code == 403
    other_session, other_config = open_room()
    wrong_session = Client()
    wrong_session.cookies = buyer_a.cookies  # the buyer's own token, for another queue
    other_seat = url("toggle_seat", session_id=str(other_session["_id"]))
    assert wrong_session.post(other_seat, {"seat": "0:0"}, **HTMX).status_code == 403


# --- bad input: 4xx, never 500 ---


@pytest.mark.parametrize(
    "path",
    [
        "/queue/not-an-id/",
        "/queue/%00/",
        "/queue/" + "f" * 24 + "/",
        "/queue/" + "f" * 24 + "/status",
        "/queue/" + "x" * 3000 + "/",
        "/queue/../admin/",
    ],
)
def test_bad_queue_urls_are_4xx(client, path):
    response = client.get(path)
    assert 400 <= response.status_code < 500, (path, response.status_code)


def test_junk_cookies_and_methods_never_make_a_500(client):
    session, config = open_room(on_sale=30)
    client.get(queue_path(config))
    for junk in ["", "x", "a:b:c", "é" * 10, "x" * 5000, admission.issue(ObjectId(), "s:x", 0)]:
        client.cookies[admission.cookie_name(config.queue_id)] = junk
        client.cookies[waiting_room.ticket_cookie_name(config.queue_id)] = junk
        client.cookies["wr_zzz"] = junk
        client.cookies[buyer.COOKIE_NAME] = junk if junk else "broken"
        for path in (queue_path(config), status_path(config), url("session", session_id=str(session["_id"]))):
            assert client.get(path).status_code in (200, 302), (junk[:20], path)
        assert client.post(url("hold", session_id=str(session["_id"])), {"seats": "0:0"}).status_code == 403
    assert client.post(queue_path(config)).status_code in (403, 405)
    assert Client(enforce_csrf_checks=False).post(status_path(config)).status_code == 405
    assert client.get(queue_path(config), {"x": "<script>"}).status_code == 200


def test_a_room_ended_meanwhile_sends_the_buyer_to_the_seat_map(client):
    session, config = open_room(on_sale=30)
    client.get(queue_path(config))
    waiting_room.disable(config.queue_id)
    waiting_room.forget_cached(config.queue_id)
    response = client.get(status_path(config), **HTMX)
    assert response["HX-Redirect"] == url("session", session_id=str(session["_id"])) + "?room=ended"
    assert client.get(url("session", session_id=str(session["_id"]))).status_code == 200


def test_an_arrival_is_sent_to_the_queue_without_a_read_once_the_process_knows_the_sale_is_queued(client):
    """In an on-sale rush every arrival opens the seat map first: once this process has read the
    session as queued, a buyer without admission is sent on with no MongoDB command at all."""
    session, config = open_room()
    page = url("session", session_id=str(session["_id"]))
    assert client.get(page)["Location"] == queue_path(config)  # read: the process notes the queue
    with counting_commands() as counter:
        answer = Client().get(page)
    assert answer.status_code == 302 and answer["Location"] == queue_path(config)
    assert counter.commands == []
    assert admitted_client(config).get(page).status_code == 200  # an admitted buyer gets the map


def test_a_room_ended_by_another_process_sends_the_buyer_to_the_map_not_back_to_the_queue(client):
    """A process keeps its note that a session is queued for seconds. When the room ended in another
    process meanwhile, the queue sends the buyer on marked so, and the map reads the session."""
    session, config = open_room()
    page = url("session", session_id=str(session["_id"]))
    assert client.get(page)["Location"] == queue_path(config)
    mongo.sessions().update_one({"_id": session["_id"]}, {"$unset": {"waitingRoom": ""}})  # another process ends it
    assert client.get(page)["Location"] == queue_path(config)  # this process's note is still kept
    assert waiting_room.get_config(config.queue_id, fresh=True) is None  # the queue reads the room: ended
    ended = client.get(queue_path(config))
    assert ended.status_code == 302 and ended["Location"] == page + "?room=ended"
    assert client.get(ended["Location"]).status_code == 200
    assert client.get(page).status_code == 200  # that read let go of the note


# --- paused, Redis away ---


def test_staff_pause_shows_paused_and_the_place_is_kept(client):
    session, config = open_room(on_sale=-1, rate=1)
    Client().get(queue_path(config))  # takes the first turn
    client.get(queue_path(config))
    waiting_room.pause(config.queue_id)
    waiting_room.forget_cached(config.queue_id)
    body = text(client.get(status_path(config), **HTMX))
    assert "The box office has paused the queue" in body and "You keep your place." in body


def test_with_redis_unreachable_the_page_says_paused_and_the_admitted_keep_buying(client, settings):
    session, config = open_room(on_sale=-1, rate=1)
    admitted = admitted_client(config)
    client.get(queue_path(config))
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    for path in (queue_path(config), status_path(config)):
        response = client.get(path, **HTMX) if path.endswith("status") else client.get(path)
        assert response.status_code == 200
        body = text(response)
        assert "The queue is paused" in body and "You keep your place." in body
    assert client.get(url("session", session_id=str(session["_id"]))).status_code == 302  # still nobody let in
    held = admitted.post(url("toggle_seat", session_id=str(session["_id"])), {"seat": "1:0"}, **HTMX)
    assert held.status_code == 200 and "held by you" in text(held)  # the token needs no Redis


# --- a sectioned performance: one queue for all its sections ---


def test_a_sectioned_performance_queues_once_for_every_section(client):
    from booking.sales.demo_stadium import create_match, create_stadium

    first = create_match(create_stadium("Test Stadium", seats=3 * 40, rows=4, half=5))
    performance_id = first["performanceId"]
    now = clock.now()
    config = waiting_room.enable(performance_id, opens_at=now, on_sale_at=now, rate=600)
    assert config.queue_id == performance_id
    overview = url("performance", performance_id=str(performance_id))
    assert client.get(overview)["Location"] == queue_path(config)
    second = mongo.sessions().find_one({"performanceId": performance_id, "section.index": 1})
    assert client.get(url("session", session_id=str(second["_id"])))["Location"] == queue_path(config)
    response = client.get(queue_path(config))
    assert response["Location"] == overview
    assert client.get(overview).status_code == 200
    held = client.post(url("toggle_seat", session_id=str(second["_id"])), {"seat": "0:0"}, **HTMX)
    assert held.status_code == 200 and "held by you" in text(held)


# --- sold out, in the polling page ---

NEXT_POLL = re.compile(r'data-next-poll="([\d.]+)"')


def test_a_polling_page_says_sold_out_with_the_time_held_seats_may_return_and_polls_on(settings):
    settings.BOOKING_QUEUE_POLL_SECONDS = settings.BOOKING_QUEUE_POLL_MAX_SECONDS = 30
    session = make_session(grid="A: ss", prices={"s": 2000})
    held = holds.hold_seats(session["_id"], "s:holder", None, ["0:0", "0:1"])
    _session, config = open_room(session, rate=60_000)
    buyer_client = Client()
    page = buyer_client.get(queue_path(config))
    assert page.status_code == 200  # not let in: nothing left to take
    panel = text(buyer_client.get(status_path(config), headers=HTMX))
    expires = mongo.carts().find_one({"_id": held.cart_id})["expiresAt"].replace(tzinfo=UTC)
    assert "Sold out" in panel and "You keep your place." in panel
    assert f'href="{url("waiting_list_join", session_id=str(session["_id"]))}"' in panel  # the waiting list's offer
    assert "at the latest by <strong>" in panel and timezone.localtime(expires).strftime("%H:%M") in panel
    assert float(NEXT_POLL.search(panel)[1]) <= queue_panel.SOLD_OUT_LOOK_SECONDS * 1.2  # not the 30 s pace


def test_while_fewer_seats_are_left_than_buyers_wait_a_polling_page_asks_at_least_every_eight_seconds(settings):
    settings.BOOKING_QUEUE_POLL_SECONDS = settings.BOOKING_QUEUE_POLL_MAX_SECONDS = 30
    session = make_session(grid="A: ss", prices={"s": 2000})  # two seats
    _session, config = open_room(session, rate=1)
    waiting_room.poll(config, "s:first")  # let in (the minute's one buyer)
    paces = []
    for waiting in (2, 3):  # two seats: two waiting is not fewer seats than buyers, three is
        while waiting_room.stats(config).waiting < waiting - 1:
            waiting_room.poll(config, f"s:other-{waiting_room.stats(config).waiting}")
        buyer_client = Client()
        panel = text(buyer_client.get(queue_path(config)))
        assert "You are in line" in panel
        paces.append(float(NEXT_POLL.search(panel)[1]))
    assert paces[0] >= 30 * 0.8 and paces[1] <= queue_panel.SCARCE_POLL_SECONDS * 1.2
