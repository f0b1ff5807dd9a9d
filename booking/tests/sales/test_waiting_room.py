"""The waiting room's queue and admission (sales/waiting_room.py, sales/admission.py).

Queue tests drive the Lua script in the test Redis with an injected clock (every call names its
``now``); each test uses queues of its own (fresh ids), so nothing carries over between tests.
"""

import itertools
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from bson import ObjectId

from booking.core import clock, mongo
from booking.sales import admission, hold_facts, holds, selectors, waiting_room
from booking.sales.admission import AdmissionRequired
from booking.tests.factories import make_session, reread

T0 = datetime(2031, 3, 1, 10, 0, tzinfo=UTC)  # on-sale


def ms(n):
    return timedelta(milliseconds=n)


def room(rate=60, *, opens=T0 - timedelta(hours=1), on_sale=T0, paused=False, rev=1, queue_id=None):
    """A queue's settings; a new queue is also created in Redis at its opening, as staff do."""
    config = waiting_room.RoomConfig(
        queue_id=queue_id or ObjectId(),
        session_ids=(),
        opens_at=opens,
        on_sale_at=on_sale,
        rate=rate,
        paused=paused,
        rev=rev,
        start=T0 + timedelta(days=1),
    )
    if queue_id is None:
        waiting_room.tick(config, now=opens, first=True)
    return config


def admitted(config):
    return [owner for owner, _score in waiting_room.admission_log(config.queue_id)]


def join_early(config, owners, start=T0 - timedelta(minutes=30)):
    for i, owner in enumerate(owners):
        result = waiting_room.poll(config, owner, now=start + timedelta(seconds=i))
        assert result.state == "waiting"


# --- order ---


def test_early_arrivals_get_a_fair_random_order():
    """Everybody who came before the sale is equal: over many queues, each of five early buyers
    (joining in the same order every time) is first about equally often, and so is the one who
    came last. Chi-square with 4 degrees of freedom, p = 0.001 -> 18.47."""
    trials, buyers = 600, 5
    first: Counter[object] = Counter()  # owners
    last_comer_places: Counter[object] = Counter()  # places
    for _ in range(trials):
        config = room(rate=60_000)  # everybody admitted in one go at the sale
        owners = [f"s:early{i}" for i in range(buyers)]
        join_early(config, owners)
        waiting_room.tick(config, now=T0 + timedelta(seconds=1))
        order = admitted(config)
        assert sorted(order) == sorted(owners)
        first[order[0]] += 1
        last_comer_places[order.index(owners[-1])] += 1
    expected = trials / buyers
    for counts in (first, last_comer_places):
        chi2 = sum((counts[k] - expected) ** 2 / expected for k in (counts.keys() | set()))
        assert len(counts) == buyers
        assert chi2 < 18.47, counts


def test_late_arrivals_queue_in_arrival_order_after_every_early_one():
    config = room(rate=60)
    early = [f"s:e{i}" for i in range(20)]
    join_early(config, early)
    late = [f"s:l{i}" for i in range(20)]
    for i, owner in enumerate(late):
        # late arrivals come two in the same millisecond: still in the order they came
        result = waiting_room.poll(config, owner, now=T0 + ms(i // 2))
        assert result.state == "waiting"
        assert result.position == result.waiting  # at the back
    for second in range(1, 41):  # one a second
        waiting_room.tick(config, now=T0 + timedelta(seconds=second))
    order = admitted(config)
    assert set(order[:20]) == set(early)
    assert order[20:] == late
    scores = [float(score) for _owner, score in waiting_room.admission_log(config.queue_id)]
    assert scores == sorted(scores)  # admitted in queue order


def test_the_arrival_just_before_the_sale_is_early_and_at_the_sale_is_late():
    config = room(rate=1)
    waiting_room.poll(config, "s:a", now=T0 - ms(1))
    result = waiting_room.poll(config, "s:b", now=T0)
    assert float(waiting_room.admission_log(config.queue_id)[0][1]) < 1  # "a" was admitted at T0
    assert result.state == "waiting" and float(result.score) >= T0.timestamp() * 1e6


# --- rate ---


def test_admission_rate_at_the_exact_boundary():
    """60 a minute: the n-th buyer is let in at on-sale + n seconds, not a millisecond before."""
    config = room(rate=60)
    join_early(config, [f"s:b{i}" for i in range(10)])
    expectations = [(-1, 0), (0, 1), (999, 1), (1000, 2), (1999, 2), (2000, 3), (4999, 5), (5000, 6)]
    for offset, count in expectations:
        waiting_room.tick(config, now=T0 + ms(offset))
        assert len(admitted(config)) == count, f"{count} admitted expected at +{offset} ms"


def test_admission_rate_with_a_rate_that_does_not_divide_a_minute():
    """7 a minute: the n-th buyer at the first millisecond >= n * 60000 / 7 (8571.43 ms)."""
    config = room(rate=7)
    join_early(config, [f"s:b{i}" for i in range(5)])
    for offset, count in [(0, 1), (8571, 1), (8572, 2), (17142, 2), (17143, 3)]:
        waiting_room.tick(config, now=T0 + ms(offset))
        assert len(admitted(config)) == count, f"{count} admitted expected at +{offset} ms"


def test_nobody_is_admitted_before_the_sale_even_with_tokens():
    config = room(rate=60_000)
    join_early(config, ["s:a", "s:b"])
    waiting_room.tick(config, now=T0 - ms(1))
    assert admitted(config) == []


def test_after_a_quiet_spell_at_most_a_burst_is_let_in_at_once():
    config = room(rate=60)  # burst: ten seconds' worth
    waiting_room.tick(config, now=T0 - timedelta(minutes=1))  # the room exists before the sale
    waiting_room.tick(config, now=T0 + timedelta(minutes=5))  # nobody there: the bucket fills, capped
    for i in range(30):
        waiting_room.poll(config, f"s:c{i}", now=T0 + timedelta(minutes=5) + ms(i))
    assert len(admitted(config)) == config.burst == 10
    # the 10th, at +9 ms, left 0.009 of a buyer in the bucket: the next one is due at +1000 ms
    waiting_room.tick(config, now=T0 + timedelta(minutes=5) + ms(999))
    assert len(admitted(config)) == 10
    waiting_room.tick(config, now=T0 + timedelta(minutes=5) + ms(1000))
    assert len(admitted(config)) == 11


def test_staff_change_the_rate_live_and_the_old_rate_counts_until_the_change():
    config = room(rate=60)
    join_early(config, [f"s:b{i}" for i in range(20)])
    waiting_room.tick(config, now=T0 + ms(500))  # 1 admitted, half a token in the bucket
    faster = room(rate=120, rev=2, queue_id=config.queue_id)
    waiting_room.tick(faster, now=T0 + ms(500))
    waiting_room.tick(faster, now=T0 + ms(749))
    assert len(admitted(config)) == 1
    waiting_room.tick(faster, now=T0 + ms(750))  # 0.5 + 250 ms at 2/s = 1 token
    assert len(admitted(config)) == 2
    stale = room(rate=60, rev=1, queue_id=config.queue_id)  # a process with an old copy cannot undo it
    result = waiting_room.poll(stale, "s:b19", now=T0 + ms(1250))
    assert result.rate == 120
    assert len(admitted(config)) == 3


# --- pause ---


def test_pause_stops_admission_keeps_places_and_resume_goes_on_in_order():
    config = room(rate=60)
    owners = [f"s:b{i}" for i in range(6)]
    join_early(config, owners)
    waiting_room.tick(config, now=T0)
    assert len(admitted(config)) == 1
    paused = room(rate=60, paused=True, rev=2, queue_id=config.queue_id)
    waiting_room.tick(paused, now=T0 + ms(10))
    places = {o: waiting_room.poll(paused, o, now=T0 + timedelta(minutes=1)) for o in owners}
    assert len(admitted(config)) == 1  # a minute paused: nobody let in
    assert all(r.paused for r in places.values())
    waiting_room.tick(paused, now=T0 + timedelta(minutes=2))
    assert len(admitted(config)) == 1
    resumed = room(rate=60, paused=False, rev=3, queue_id=config.queue_id)
    waiting_room.tick(resumed, now=T0 + timedelta(minutes=2))
    # the paused time earned nothing: 10 ms before the pause, then a full second after resuming
    assert len(admitted(config)) == 1
    waiting_room.tick(resumed, now=T0 + timedelta(minutes=2) + ms(989))
    assert len(admitted(config)) == 1
    waiting_room.tick(resumed, now=T0 + timedelta(minutes=2) + ms(990))
    assert len(admitted(config)) == 2
    waiting = sorted((r.position, o) for o, r in places.items() if r.state == "waiting")
    assert [o for _p, o in waiting][:1] == admitted(config)[1:2]  # the next in line was next


# --- one place per buyer ---


def test_one_place_per_buyer_reload_and_second_tab():
    config = room(rate=1)
    join_early(config, ["s:head"])
    waiting_room.tick(config, now=T0)  # the first token goes to "head"
    first = waiting_room.poll(config, "s:me", now=T0 + ms(1))  # late: arrival order
    for i in range(5):
        waiting_room.poll(config, f"s:other{i}", now=T0 + ms(2 + i))
    again = waiting_room.poll(config, "s:me", now=T0 + ms(100))  # reload
    tab = waiting_room.poll(config, "s:me", now=T0 + ms(101))  # a second tab, same cookie
    assert again.score == tab.score == first.score
    assert first.position == again.position == tab.position == 1
    assert tab.waiting == again.waiting == 6
    config2 = room(rate=1)
    join_early(config2, ["s:x"])
    a = waiting_room.poll(config2, "s:x", now=T0 - ms(5))
    b = waiting_room.poll(config2, "s:x", now=T0 - ms(4))
    assert a.score == b.score and a.waiting == b.waiting == 1


def test_an_admitted_buyer_stays_admitted_until_the_admission_ends_then_queues_again(settings):
    settings.BOOKING_QUEUE_ADMISSION_SECONDS = 60
    config = room(rate=1)
    join_early(config, ["s:a", "s:b"])
    waiting_room.tick(config, now=T0)
    first = admitted(config)[0]
    result = waiting_room.poll(config, first, now=T0 + ms(59_999))
    assert result.state == "admitted" and result.admitted_at_ms == int(T0.timestamp() * 1000)
    back = waiting_room.poll(config, first, now=T0 + ms(60_000))
    assert back.state == "waiting" and back.note == "lapsed" and back.position == 1


# --- leaving ---


def test_a_buyer_who_stops_polling_loses_the_place_after_the_grace_period(settings):
    settings.BOOKING_QUEUE_GRACE_SECONDS = 60
    config = room(rate=1)
    t = T0 - timedelta(minutes=5)  # before the sale: nobody is admitted meanwhile
    waiting_room.poll(config, "s:gone", now=t + ms(2))
    waiting_room.poll(config, "s:stays", now=t + ms(3))
    for second in range(5, 61, 5):  # "stays" keeps polling, "gone" does not
        waiting_room.poll(config, "s:stays", now=t + timedelta(seconds=second))
    assert waiting_room.poll(config, "s:stays", now=t + ms(60_002)).waiting == 2  # not seen for exactly 60 s
    assert waiting_room.poll(config, "s:stays", now=t + ms(60_003)).waiting == 1  # 60 s and 1 ms: dropped
    stats = waiting_room.stats(config, now=t + ms(60_004))
    assert stats.left == 1 and stats.waiting == 1
    back = waiting_room.poll(config, "s:gone", now=t + ms(61_000))
    assert back.note == "left" and back.waiting == 2  # joined again


def test_after_an_outage_nobody_is_dropped_for_a_grace_period(settings):
    """No poll reached Redis for longer than the grace period (Redis or the site was down):
    everybody gets one grace period to come back before anyone is dropped."""
    settings.BOOKING_QUEUE_GRACE_SECONDS = 60
    config = room(rate=1)
    join_early(config, ["s:a", "s:b", "s:c"])
    back_at = T0 - timedelta(minutes=10)  # twenty minutes without any poll: an outage
    assert waiting_room.poll(config, "s:a", now=back_at).waiting == 3  # "a" looks once, then goes
    for second in range(10, 60, 10):  # "b" keeps polling; "c" never came back
        assert waiting_room.poll(config, "s:b", now=back_at + timedelta(seconds=second)).waiting == 3
    assert waiting_room.poll(config, "s:b", now=back_at + timedelta(seconds=59, milliseconds=999)).waiting == 3
    # one grace period after the outage "c" is dropped, and "a" a grace period after its last poll
    assert waiting_room.poll(config, "s:b", now=back_at + timedelta(seconds=60)).waiting == 2
    assert waiting_room.poll(config, "s:b", now=back_at + timedelta(seconds=60, milliseconds=1)).waiting == 1
    assert waiting_room.stats(config, now=back_at + timedelta(seconds=62)).left == 2


# --- a Redis that comes back empty ---


def test_a_queue_lost_by_redis_is_rebuilt_from_the_buyers_tickets():
    config = room(rate=60)
    owners = [f"s:t{i}" for i in range(8)]
    tickets = {}
    for i, owner in enumerate(owners):
        result = waiting_room.poll(config, owner, now=T0 - timedelta(minutes=5) + ms(i))
        tickets[owner] = (result.epoch, result.score)
    before = {o: waiting_room.poll(config, o, now=T0 - timedelta(minutes=4)).position for o in owners}
    waiting_room.drop(config.queue_id)  # Redis restarted without its data
    newcomer = waiting_room.poll(config, "s:new", now=T0 - timedelta(minutes=3))
    assert newcomer.epoch != tickets[owners[0]][0]
    for owner in reversed(owners):  # they come back in any order, with their tickets
        result = waiting_room.poll(config, owner, ticket=tickets[owner], now=T0 - timedelta(minutes=2))
        assert result.note == "restored" and result.score == tickets[owner][1]
    after = {o: waiting_room.poll(config, o, now=T0 - timedelta(minutes=1)).position for o in owners}
    newcomer_place = waiting_room.poll(config, "s:new", now=T0 - timedelta(minutes=1)).position
    relative = sorted(owners, key=lambda o: after[o])
    assert relative == sorted(owners, key=lambda o: before[o])  # the same order as before the loss
    # a ticket is honoured once per epoch: replaying it after admission does not queue again
    waiting_room.tick(config, now=T0 + timedelta(minutes=1))
    assert waiting_room.poll(config, relative[0], ticket=tickets[relative[0]], now=T0 + ms(60_001)).state == "admitted"
    assert 1 <= newcomer_place <= 9


def test_a_queue_lost_after_the_sale_opened_lets_nobody_in_until_its_buyers_are_back(settings):
    """Whoever polls first after Redis came back empty must not overtake the others: the queue
    waits (regather) for every page to come back with its ticket, then admits in the old order."""
    settings.BOOKING_QUEUE_POLL_MAX_SECONDS = 10  # regather: 15 s
    config = room(rate=600)
    owners = [f"s:r{i}" for i in range(6)]
    tickets = {}
    for i, owner in enumerate(owners):
        result = waiting_room.poll(config, owner, now=T0 - timedelta(minutes=5) + ms(i))
        tickets[owner] = (result.epoch, result.score)
    expected = sorted(owners, key=lambda o: float(tickets[o][1]))
    waiting_room.drop(config.queue_id)  # lost just before the sale; back after it
    back = T0 + timedelta(seconds=30)
    for i, owner in enumerate(reversed(expected)):  # the worst placed come back first
        result = waiting_room.poll(config, owner, ticket=tickets[owner], now=back + timedelta(seconds=i))
        assert result.state == "waiting" and result.note == "restored"
    waiting_room.tick(config, now=back + ms(14_999))
    assert admitted(config) == []
    waiting_room.tick(config, now=back + ms(15_000))
    assert admitted(config) == expected


def test_a_ticket_of_another_buyer_or_queue_is_ignored():
    qid = ObjectId()
    value = waiting_room.sign_ticket(qid, "s:me", "e1", "0.5")
    assert waiting_room.read_ticket(value, qid, "s:me") == ("e1", "0.5")
    assert waiting_room.read_ticket(value, qid, "s:you") is None
    assert waiting_room.read_ticket(value, ObjectId(), "s:me") is None
    assert waiting_room.read_ticket(value[:-1] + "x", qid, "s:me") is None
    assert waiting_room.read_ticket(admission.issue(qid, "s:me", 0), qid, "s:me") is None  # other salt


# --- the admission token ---


def test_admission_token_signature_expiry_and_binding(settings):
    settings.BOOKING_QUEUE_ADMISSION_SECONDS = 600
    qid, at = ObjectId(), int(T0.timestamp() * 1000)
    token = admission.issue(qid, "s:me", at)
    assert admission.verify(token, qid, "s:me", now_ms=at)
    assert admission.verify(token, qid, "s:me", now_ms=at + 599_999)
    assert not admission.verify(token, qid, "s:me", now_ms=at + 600_000)  # expired
    assert not admission.verify(token, qid, "s:other", now_ms=at)  # another buyer's token
    assert not admission.verify(token, ObjectId(), "s:me", now_ms=at)  # another queue's
    assert not admission.verify(token.replace("|", "|x", 1), qid, "s:me", now_ms=at)  # tampered
    forged = f"{qid}|{admission.owner_digest('s:me')}|{at + 10**9}:notasignature"
    assert not admission.verify(forged, qid, "s:me", now_ms=at)
    assert not admission.verify(waiting_room.sign_ticket(qid, "s:me", "e", "0.1"), qid, "s:me", now_ms=at)
    for junk in (None, "", "x" * 500, "a:b", 42):
        assert not admission.verify(junk, qid, "s:me", now_ms=at)  # type: ignore[arg-type]  # junk on purpose
    assert admission.expiry_ms(token) == at + 600_000


# --- the hold gate (the service level) ---


@pytest.fixture
def queued(monkeypatch):
    session = make_session()
    config = waiting_room.enable(
        session["_id"],
        opens_at=clock.now() - timedelta(minutes=10),
        on_sale_at=clock.now() - timedelta(minutes=1),
        rate=600,
    )
    return session, config


def token_for(config, owner):
    return {config.queue_id: admission.issue(config.queue_id, owner, admission.clock_ms())}


def presenting(owner, tokens) -> holds.HoldContext:
    """The hold context of a buyer presenting these admission tokens (verified as the views do)."""
    return holds.HoldContext(admitted_queues=admission.verified_queues(owner, tokens))


@pytest.mark.parametrize("facts_known", [False, True], ids=["first-hold-in-process", "hold-without-read"])
def test_hold_on_a_queued_session_is_refused_without_admission(queued, facts_known):
    session, config = queued
    if facts_known:  # this process knows the session: the hold writes without reading it first
        hold_facts.sale_facts(reread(session["_id"]))
    else:
        hold_facts._sale_facts.clear()
    with pytest.raises(AdmissionRequired) as refused:
        holds.hold_seats(session["_id"], "s:me", None, ["0:0"])
    assert refused.value.queue_id == session["_id"]
    assert "/queue/" in refused.value.queue_url
    assert selectors.get_session(session["_id"])["seats"][0][0] == 0
    held = holds.hold_seats(
        session["_id"], "s:me", None, ["0:0"], context=presenting("s:me", token_for(config, "s:me"))
    )
    assert held.seats == [(0, 0)]


def test_a_token_of_another_buyer_or_session_or_an_expired_one_is_refused(queued, settings):
    session, config = queued
    other = make_session()
    waiting_room.enable(other["_id"], opens_at=clock.now() - timedelta(minutes=5), on_sale_at=clock.now(), rate=10)
    attempts = {
        "another buyer's": token_for(config, "s:someone-else"),
        "another session's": {config.queue_id: admission.issue(other["_id"], "s:me", admission.clock_ms())},
        "the other queue's": {other["_id"]: admission.issue(other["_id"], "s:me", admission.clock_ms())},
        "expired": {config.queue_id: admission.issue(config.queue_id, "s:me", admission.clock_ms() - 10**7)},
    }
    for name, tokens in attempts.items():
        with pytest.raises(AdmissionRequired):
            holds.hold_seats(session["_id"], "s:me", None, ["0:1"], context=presenting("s:me", tokens))
            pytest.fail(f"held with {name} token")
    assert selectors.get_session(session["_id"])["seats"][0][1] == 0


def test_best_available_and_toggle_are_refused_too_and_release_is_not(queued):
    session, config = queued
    with pytest.raises(AdmissionRequired):
        holds.hold_best_available(session["_id"], "s:me", None, 2)
    with pytest.raises(AdmissionRequired):
        holds.toggle_seat(session["_id"], "s:me", None, "0:0")
    held = holds.hold_seats(
        session["_id"], "s:me", None, ["0:0", "0:1"], context=presenting("s:me", token_for(config, "s:me"))
    )
    released = holds.release_seats(session["_id"], "s:me", held.cart_id, ["0:0"])  # no admission needed
    assert released.seats == [(0, 0)]


def test_a_session_queued_after_this_process_read_it_is_guarded_by_the_write_itself(queued):
    """Facts kept from before the room existed: the write's own filter refuses."""
    plain = make_session()
    hold_facts.sale_facts(reread(plain["_id"]))
    holds.hold_seats(plain["_id"], "s:early-bird", None, ["0:0"])  # before: no queue, holds work
    waiting_room.enable(plain["_id"], opens_at=clock.now(), on_sale_at=clock.now() + timedelta(minutes=1), rate=60)
    with pytest.raises(AdmissionRequired):
        holds.hold_seats(plain["_id"], "s:late-bird", None, ["1:0"])


def test_ending_the_room_opens_the_sale_to_everybody(queued):
    session, config = queued
    waiting_room.disable(config.queue_id)
    assert "waitingRoom" not in mongo.sessions().find_one({"_id": session["_id"]})
    assert holds.hold_seats(session["_id"], "s:anyone", None, ["2:0"]).seats == [(2, 0)]


# --- settings on the documents ---


def test_enable_validates_and_a_sectioned_performance_gets_one_queue():
    from booking.sales.demo_stadium import create_match, create_stadium

    session = make_session()
    now = clock.now()
    with pytest.raises(Exception, match="before the performance starts"):
        waiting_room.enable(session["_id"], opens_at=now, on_sale_at=now + timedelta(days=3), rate=10)
    with pytest.raises(Exception, match="between 1 and"):
        waiting_room.enable(session["_id"], opens_at=now, on_sale_at=now, rate=0)
    with pytest.raises(Exception, match="open before"):
        waiting_room.enable(session["_id"], opens_at=now + timedelta(hours=1), on_sale_at=now, rate=10)
    config = waiting_room.enable(session["_id"], opens_at=now, on_sale_at=now, rate=10)
    with pytest.raises(Exception, match="already"):
        waiting_room.enable(session["_id"], opens_at=now, on_sale_at=now, rate=10)
    assert config.queue_id == session["_id"] and not config.sectioned

    stadium = create_stadium("Test Stadium", seats=3 * 40, rows=4, half=5)
    match = create_match(stadium)["performanceId"]
    sections = list(mongo.sessions().find({"performanceId": match}, {"_id": 1}))
    config = waiting_room.enable(sections[1]["_id"], opens_at=now, on_sale_at=now, rate=10)
    assert config.queue_id == match and config.sectioned
    assert set(config.session_ids) == {s["_id"] for s in sections}


def test_staff_figures_count_what_they_say(settings):
    settings.BOOKING_QUEUE_ADMISSION_SECONDS = 60
    config = room(rate=60)
    join_early(config, [f"s:f{i}" for i in range(5)])
    waiting_room.tick(config, now=T0 + ms(1000))  # two admitted
    stats = waiting_room.stats(config, now=T0 + ms(1000))
    assert (stats.waiting, stats.admitted, stats.buying, stats.joined) == (3, 2, 2, 5)
    stats = waiting_room.stats(config, now=T0 + ms(61_000))  # the first two admissions have run out
    assert stats.buying == stats.admitted - 2


def test_a_room_cannot_let_buyers_in_before_the_sessions_own_sale_window_opens():
    session = make_session()
    now = clock.now()
    mongo.sessions().update_one({"_id": session["_id"]}, {"$set": {"saleOpens": now + timedelta(hours=1)}})
    with pytest.raises(Exception, match="sale window of this performance opens"):
        waiting_room.enable(session["_id"], opens_at=now, on_sale_at=now + timedelta(minutes=30), rate=60)
    config = waiting_room.enable(session["_id"], opens_at=now, on_sale_at=now + timedelta(hours=1), rate=60)
    with pytest.raises(Exception, match="sale window of this performance opens"):
        waiting_room.change(config.queue_id, on_sale_at=now + timedelta(minutes=59))


def test_change_bumps_the_revision_and_reaches_redis(queued):
    session, config = queued
    changed = waiting_room.set_rate(config.queue_id, 900)
    assert changed.rev == config.rev + 1 and changed.rate == 900
    paused = waiting_room.pause(config.queue_id)
    stats = waiting_room.stats(paused)
    assert stats.paused and stats.rate == 900 and stats.available
    assert waiting_room.resume(config.queue_id).paused is False
    with pytest.raises(Exception, match="Unknown setting"):
        waiting_room.change(config.queue_id, colour="red")
    assert [r.queue_id for r in waiting_room.rooms()] == [config.queue_id]


def test_ids_are_unique_per_call():
    assert len({waiting_room.keys(i)[0] for i in itertools.islice(iter(ObjectId, None), 3)}) == 3


# --- many buyers looked at in one round trip (the pushed waiting room, booking/presale/queue_push.py) ---


def commands_run(name: str) -> int:
    stats = waiting_room.store().info("commandstats")
    return int(stats.get(f"cmdstat_{name}", {}).get("calls", 0))


def test_poll_many_answers_each_buyer_as_poll_does_in_one_round_trip():
    config = room(rate=1)  # one buyer a minute: the first caller is let in, the rest wait in order
    owners = [f"s:many{i}" for i in range(5)]
    for i, owner in enumerate(owners):
        waiting_room.poll(config, owner, now=T0 + ms(i))
    script_checks, evals = commands_run("script|exists"), commands_run("evalsha")
    many = waiting_room.poll_many(config, [(owner, None) for owner in owners], now=T0 + ms(10))
    assert commands_run("script|exists") == script_checks  # no SCRIPT EXISTS before the pipeline
    assert commands_run("evalsha") == evals + 5
    one_by_one = [waiting_room.poll(config, owner, now=T0 + ms(10)) for owner in owners]
    assert [(r.state, r.position, r.waiting) for r in many] == [(r.state, r.position, r.waiting) for r in one_by_one]
    assert [r.state for r in many] == ["admitted", "waiting", "waiting", "waiting", "waiting"]
    assert [r.position for r in many[1:]] == [1, 2, 3, 4]


def test_a_redis_that_forgot_the_script_is_given_it_again_and_the_calls_run_once():
    config = room(rate=1)
    waiting_room.poll(config, "s:first", now=T0)
    waiting_room.store().script_flush()  # what a restarted Redis knows of it
    [second, third] = waiting_room.poll_many(config, [("s:second", None), ("s:third", None)], now=T0 + ms(1))
    assert (second.state, second.position, third.position, third.waiting) == ("waiting", 1, 2, 2)
    waiting_room.store().script_flush()
    assert waiting_room.poll(config, "s:fourth", now=T0 + ms(2)).position == 3
