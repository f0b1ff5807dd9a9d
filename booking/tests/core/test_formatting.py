"""How values are written for people (booking/core/formatting.py)."""

from django.utils.html import escape as django_escape

from booking.core import formatting


def test_money_format():
    assert formatting.format_money(2500, "EUR") == "€25"
    assert formatting.format_money(2550, "EUR") == "€25.50"
    assert formatting.format_money(123456, "GBP") == "£1,234.56"
    assert formatting.format_money(900, "CHF") == "9.00 CHF"


def test_mail_money_countdown_and_seat_label():
    assert formatting.format_money_code(2050, "EUR") == "20.50 EUR"
    assert formatting.countdown(125) == "2:05" and formatting.countdown(-3) == "0:00"
    assert formatting.seat_label("A", "12") == "Row A, seat 12"


def test_escape_is_djangos_escaping():
    for text in ["<b>\"Hall\" & 'Q'</b>", "plain", 12]:
        assert formatting.escape(text) == django_escape(text)
