"""Money: VAT from gross prices per rate, the documented rounding rule, rates per theater."""

from typing import cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from booking.core.domain import Order
from booking.payments import money


def test_vat_per_rate_from_gross_prices():
    lines = money.breakdown([(2200, "7"), (1500, "7"), (200, "19")])
    assert [line.as_doc() for line in lines] == [
        {"rate": "7", "net": 3458, "vat": 242, "gross": 3700},  # 3700 / 1.07 = 3457.94 -> 3458
        {"rate": "19", "net": 168, "vat": 32, "gross": 200},  # 200 / 1.19 = 168.07 -> 168
    ]


def test_rounding_is_half_up_on_the_total_per_rate_not_per_line():
    # 107 / 1.07 = 100 exactly; 1 cent at 7 % is 0.93 net -> 1 (half up), VAT 0
    assert money.net_of(107, "7") == 100
    assert money.net_of(1, "7") == 1
    # three lines of 1.00 at 19 %: per line 0.84 + 0.16; on the total 3.00 -> 2.52 + 0.48
    [line] = money.breakdown([(100, "19")] * 3)
    assert (line.net, line.vat) == (252, 48)
    # exactly half a cent rounds up (banker's rounding would give 2): 4 / 1.6 = 2.5 -> 3
    assert money.net_of(4, "60") == 3


@given(st.lists(st.tuples(st.integers(0, 1_000_000), st.sampled_from(["0", "7", "7.7", "19", "20"])), max_size=30))
def test_net_plus_vat_is_always_the_gross(pairs):
    lines = money.breakdown(pairs)
    assert sum(line.gross for line in lines) == sum(g for g, _ in pairs)
    for line in lines:
        assert line.net + line.vat == line.gross and 0 <= line.vat <= line.gross


@pytest.mark.parametrize("bad", ["-1", "100", "abc", "", "nan", "inf"])
def test_nonsense_rates_are_refused(bad):
    with pytest.raises(ValueError):
        money.rate(bad)


def test_rates_come_from_the_theater_per_category_then_its_ticket_rate_then_the_setting(settings):
    settings.BOOKING_VAT_RATE = "7"
    assert money.ticket_rate(None, "p") == "7"
    assert money.ticket_rate({"vatRate": "10"}, "p") == "10"
    assert money.ticket_rate({"vatRate": "10", "vatRates": {"p": "19"}}, "p") == "19"
    assert money.ticket_rate({"vatRate": "10", "vatRates": {"p": "19"}}, "s") == "10"


def test_booking_fee_setting(settings):
    settings.BOOKING_FEE, settings.BOOKING_FEE_VAT_RATE = 150, "19"
    assert money.booking_fee() == (150, "19")
    order = cast(
        Order, {"lines": [{"price": 2140, "vat": "7"}], "fee": {"amount": 150, "vat": "19"}}
    )  # its money alone
    assert [(v.rate, v.net, v.vat) for v in money.order_breakdown(order)] == [("7", 2000, 140), ("19", 126, 24)]


def test_format_money():
    assert money.format_money(123456, "EUR") == "1,234.56 EUR"
    assert money.format_money(-5, "EUR") == "-0.05 EUR"
