"""An unchanged live map answered from the version this process read a moment ago
(booking/web/live_versions.py): no MongoDB command, a change seen at most the lifetime later, and
a viewer whose version the kept one does not match is always read for."""

import pytest
from django.test import Client
from django.urls import reverse

from booking.sales import holds
from booking.tests.commands import counting_commands
from booking.tests.factories import make_session
from booking.web import live_versions

pytestmark = pytest.mark.django_db

LIFETIME = 0.5


@pytest.fixture(autouse=True)
def kept_for_half_a_second(settings, monkeypatch):
    """The kept version on (the test settings turn it off), on a clock the test moves."""
    settings.BOOKING_LIVE_MAP_VERSION_SECONDS = LIFETIME
    live_versions.clear()
    now = [1000.0]
    monkeypatch.setattr(live_versions, "monotonic", lambda: now[0])
    yield now
    live_versions.clear()


def map_url(session) -> str:
    return reverse("booking:seat_map", kwargs={"session_id": str(session["_id"])})


def test_an_unchanged_map_asked_again_costs_no_mongodb_command():
    session = make_session()
    viewer = Client()
    etag = viewer.get(map_url(session))["ETag"]
    with counting_commands() as counter:
        again = viewer.get(map_url(session), HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304 and again["ETag"] == etag
    assert counter.commands == []


def test_a_change_reaches_a_viewer_once_the_lifetime_has_passed(kept_for_half_a_second):
    session = make_session()
    viewer = Client()
    etag = viewer.get(map_url(session))["ETag"]
    holds.hold_seats(session["_id"], "s:other", None, ["0:0"])
    kept_for_half_a_second[0] += LIFETIME - 0.001  # just inside: still the kept version
    assert viewer.get(map_url(session), HTTP_IF_NONE_MATCH=etag).status_code == 304
    kept_for_half_a_second[0] += 0.001  # exactly the lifetime: read again
    changed = viewer.get(map_url(session), HTTP_IF_NONE_MATCH=etag)
    assert changed.status_code == 200
    assert "held by someone else" in changed.content.decode()


def test_a_viewer_ahead_of_the_kept_version_is_read_for_not_sent_the_map_again():
    """A buyer whose own hold made the new version asks with it while another viewer's read of the
    version before is still kept: the read says unchanged."""
    session = make_session()
    other = Client()
    other.get(map_url(session))  # version 1 kept
    holds.hold_seats(session["_id"], "s:mine", None, ["0:0"])
    newer = f'"{session["version"] + 1}"'
    with counting_commands() as counter:
        answer = Client().get(map_url(session), HTTP_IF_NONE_MATCH=newer)
    assert answer.status_code == 304 and answer["ETag"] == newer
    assert counter.commands == [("find", "sessions")]
    with counting_commands() as counter:  # and that version is the kept one now
        assert other.get(map_url(session), HTTP_IF_NONE_MATCH=newer).status_code == 304
    assert counter.commands == []
