"""What a cart or order costs: the one function that turns items (and a promo code) into totals.

Checkout stores its result on the order; the cart pages show it; payments charges it. Amounts are
integer minor units.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from booking.sales import promos


@dataclass(frozen=True)
class Totals:
    subtotal: int  # the items' locked prices
    discount: int = 0  # what the promo code takes off (never more than the subtotal)
    total: int = 0  # what is charged
    line_discounts: list[int] = field(default_factory=list)  # per item, in the items' order


def totals(items: Sequence[Mapping[str, Any]], promo: dict | None = None) -> Totals:
    """The totals of these items with this promo (a cart's ``promo``: the code's terms as redeemed)."""
    subtotal = sum(i["price"] for i in items)
    discounts = [0] * len(items)
    if promo:
        discounts = promos.line_discounts(items, promo)  # promo terms live with the codes
    discount = min(sum(discounts), subtotal)
    return Totals(subtotal=subtotal, discount=discount, total=subtotal - discount, line_discounts=discounts)


# A complimentary sale at the counter (sales/counter.py: the cart's ``comp``): every ticket free.
COMPLIMENTARY = {"kind": "price", "value": 0}


def cart_totals(cart: Mapping[str, Any]) -> Totals:  # a Cart, or one being made
    return totals(cart.get("items", []), COMPLIMENTARY if cart.get("comp") else cart.get("promo"))
