"""The cart summary panel and the notice, which every seat click answers with: the partials
``cart-summary`` and ``notice`` of ``booking/session.html``."""

from datetime import timedelta

from django.template.loader import render_to_string
from django.utils import timezone

from booking.web.presenters import CartGroup


def cart_summary_html(**context) -> str:
    return render_to_string("booking/session.html#cart-summary", context)


def notice_html(notice: str, level: str = "", *, oob: bool = False) -> str:
    return render_to_string("booking/session.html#notice", {"notice": notice, "notice_level": level, "oob": oob})


def group(name="Hamlet", theater="Grand Hall", lines=(("A", "1", "Stalls", 2550),)):
    g = CartGroup(session_id="6b046de37bab70edabbe8f9e", name=name, theater=theater, start=None)
    g.lines = [{"key": "0:0", "row": r, "seat": s, "category": c, "price": p} for r, s, c, p in lines]
    return g


def test_held_seats_with_countdown_prices_total_and_links():
    expires = timezone.now() + timedelta(seconds=125)
    html = cart_summary_html(
        cart={"items": [{}, {}]},
        groups=[group(lines=(("A", "1", "Stalls", 2550), ("A", "2", "Stalls", 3900)))],
        total=6450,
        seat_count=2,
        expires_at=expires,
        seconds_left=125,
        oob=True,
    )
    assert 'id="cart-summary"' in html and 'hx-swap-oob="true"' in html
    assert 'data-seconds="125"' in html and ">2:05</strong>" in html
    assert f"(until {timezone.localtime(expires):%H:%M})" in html
    assert '<a href="/sessions/6b046de37bab70edabbe8f9e/">Hamlet</a>' in html
    assert "Row A, seat 2 <span" in html and "€39</span>" in html
    assert "Total (2 seats)</span><strong>€64.50</strong>" in html
    assert 'href="/checkout/"' in html and 'href="/cart/"' in html


def test_names_from_staff_are_escaped_and_one_seat_is_singular():
    html = cart_summary_html(
        cart={"items": [{}]},
        groups=[group(name="<script>x</script>", theater='"Hall"', lines=(("<b>", "1", "&", 100),))],
        total=100,
        seat_count=1,
    )
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "Row &lt;b&gt;, seat 1" in html and ">&amp;</span>" in html
    assert "Total (1 seat)</span>" in html


def test_expired_and_empty_cart():
    assert "Your hold has expired." in cart_summary_html(cart=None, cart_expired=True)
    empty = cart_summary_html(cart=None)
    assert "Click a free seat on the map" in empty and "hx-swap-oob" not in empty


def test_notice_is_escaped_and_defaults_to_info():
    assert '<p class="msg msg-info">a &lt;b&gt;</p>' in notice_html("a <b>")
    assert notice_html("") == '<div id="notice" class="notice-area" role="status" aria-live="polite"></div>'
    assert 'hx-swap-oob="true"><p class="msg msg-error">' in notice_html("no", "error", oob=True)
