"""The buyer's cart panel as HTML, built in Python: the cart summary, the phone's cart bar and the
notice area, each an element swapped in by its id.

Every click on a seat answers with all three (``seat_change``), so they are built here in one pass
instead of through the template engine, which cost a third of a hold's CPU (docs/performance.md, "A
hold's CPU, profiled"). The page shows the same HTML: ``booking/session.html``'s partials
``cart-summary``, ``cart-bar`` and ``notice`` call these builders through ``booking_tags``.

``values`` is what the templates get from ``presale.context.cart_context`` (``cart``, ``groups``,
``total``, ``seat_count``, ``seconds_left``, ``expires_at``, ``canceled_shows``, ``cart_expired``)
plus ``notice``, ``notice_level`` and ``oob`` (an htmx out-of-band swap). Words are looked up with
the msgids the template tags used, so the German catalog applies as before; the buyer's text and
the staff's names are escaped, the words themselves are not (the templates' ``{% translate %}`` of
a literal is not either).
"""

from collections.abc import Mapping
from typing import Any

from django.urls import reverse
from django.utils.formats import date_format
from django.utils.timezone import template_localtime
from django.utils.translation import gettext, ngettext

from booking.core.formatting import countdown, escape, format_money
from booking.core.localized import localized

OOB = ' hx-swap-oob="true"'


def _oob(values: Mapping[str, Any]) -> str:
    return OOB if values.get("oob") else ""


def _items(values: Mapping[str, Any]) -> list:
    cart = values.get("cart")
    return (cart.get("items") or []) if cart else []


def _when(moment, pattern: str) -> str:
    """A time as the templates' ``date`` filter writes it (the site's time zone)."""
    return escape(date_format(template_localtime(moment), pattern)) if moment else ""


def notice(values: Mapping[str, Any]) -> str:
    """The notice area: what the last action did (``notice``, its ``notice_level``), or empty."""
    text = values.get("notice")
    said = f'<p class="msg msg-{escape(values.get("notice_level") or "info")}">{escape(text)}</p>' if text else ""
    return f'<div id="notice" class="notice-area" role="status" aria-live="polite"{_oob(values)}>{said}</div>'


def cart_summary(values: Mapping[str, Any]) -> str:
    """The side panel "Your seats": the held seats by performance, the countdown and the total,
    or the expired hold's message, or how to start."""
    cart, items = values.get("cart"), _items(values)
    your_seats = gettext("Your seats")
    out = [
        f'<section id="cart-summary" class="panel cart-summary" aria-label="{your_seats}"{_oob(values)}>\n'
        f"  <h2>{your_seats}</h2>\n  "
    ]
    groups = values.get("groups") or []
    if cart and cart.get("subscription"):
        named = ngettext(
            "Subscription %(name)s: %(counter)s performance",
            "Subscription %(name)s: %(counter)s performances",
            len(groups),
        ) % {"name": escape(localized(cart["subscription"], "name")), "counter": len(groups)}
        out.append(f'<p class="subscription-name">{named}</p>')
    out.append("\n  ")
    for told in values.get("canceled_shows") or []:
        out.append(f'<p class="msg msg-error canceled-show" role="alert">{escape(told)}</p>')
    out.append("\n  ")
    if items:
        out.append(_held_seats(values, groups))
    elif values.get("cart_expired"):
        expired, back = gettext("Your hold has expired."), gettext("The seats went back on sale.")
        again = gettext("Please choose your seats again.")
        out.append(
            f'\n    <div class="expired" role="alert">\n      <p><strong>{expired}</strong> {back}</p>\n'
            f"      <p>{again}</p>\n    </div>\n  "
        )
    else:
        click = gettext("Click a free seat on the map to hold it, or let us pick the best available.")
        tap = gettext("Tap a free seat on the map to see it and hold it, or let us pick the best available.")
        out.append(f'\n    <p class="empty"><span class="click-hint">{click}</span>')
        out.append(f'<span class="touch-hint">{tap}</span></p>\n  ')
    out.append("\n</section>")
    return "".join(out)


def _held_seats(values: Mapping[str, Any], groups: list) -> str:
    seconds_left = values.get("seconds_left")
    held_for = gettext(
        'Held for you for <strong class="countdown-time">%(left)s</strong> more '
        '<span class="until">(until %(until)s)</span>'
    ) % {"left": escape(countdown(seconds_left)), "until": _when(values.get("expires_at"), "H:i")}
    out = [f'\n    <p class="countdown" data-seconds="{escape(seconds_left)}">\n      {held_for}\n    </p>\n    ']
    row_seat, wheelchair = gettext("Row %(row)s, seat %(seat)s"), gettext("wheelchair space")
    for group in groups:
        href = escape(reverse("booking:session", args=[group.session_id]))
        out.append(
            f'\n      <div class="cart-group">\n        <h3><a href="{href}">{escape(group.name)}</a></h3>\n        '
        )
        if group.start:
            when = _when(group.start, gettext("D j M, H:i"))
            out.append(f'<p class="small">{when} · {escape(group.theater)}</p>')
        out.append('\n        <ul class="lines">\n          ')
        for line in group.lines:
            seat = row_seat % {"row": escape(line["row"]), "seat": escape(line["seat"])}
            about = escape(line["category"])
            if line["wheelchair"]:
                about += f" · {wheelchair}"
            if len(line["offers"]) > 1:
                about += f" · {escape(line['ticket_type_name'])}"
            price = escape(format_money(line["price"]))
            out.append(f'<li><span>{seat} <span class="small">{about}</span></span><span>{price}</span></li>')
        out.append("\n        </ul>\n      </div>\n    ")
    seat_count = values.get("seat_count")
    total = ngettext("Total (%(counter)s seat)", "Total (%(counter)s seats)", seat_count) % {"counter": seat_count}
    check_out, edit_cart = gettext("Check out"), gettext("Edit cart")
    out.append(
        f'\n    <p class="total"><span>{total}</span><strong>{escape(format_money(values.get("total")))}</strong></p>\n'
        '    <p class="actions">\n'
        f'      <a class="btn btn-primary" href="{reverse("booking:checkout")}">{check_out}</a>\n'
        f'      <a class="btn btn-quiet" href="{reverse("booking:cart")}">{edit_cart}</a>\n'
        "    </p>\n  "
    )
    return "".join(out)


def cart_bar(values: Mapping[str, Any]) -> str:
    """The bar at the bottom of a phone's screen while seats are held: count, total, countdown,
    Check out (hidden while the cart is empty)."""
    if not _items(values):
        return f'<div id="cart-bar" class="cart-bar"{_oob(values)} hidden></div>'
    seat_count, seconds_left = values.get("seat_count"), values.get("seconds_left")
    seats = ngettext("%(n)s seat", "%(n)s seats", seat_count) % {"n": seat_count}
    held_for, check_out, sticky_bar = gettext("Held for"), gettext("Check out"), gettext("sticky bar")
    return (
        f'<div id="cart-bar" class="cart-bar"{_oob(values)}>\n'
        f'  <p class="bar-sum"><span>{seats}</span> <strong>{escape(format_money(values.get("total")))}</strong></p>\n'
        f'  <p class="bar-time countdown-bar" data-seconds="{escape(seconds_left)}"><span class="visually-hidden">'
        f'{held_for} </span><strong class="countdown-time">{escape(countdown(seconds_left))}</strong></p>\n'
        f'  <a class="btn btn-primary" href="{reverse("booking:checkout")}">{check_out}'
        f'<span class="visually-hidden"> ({sticky_bar})</span></a>\n'
        "</div>"
    )


def seat_change(values: Mapping[str, Any], seat_updates: str) -> str:
    """The answer to a seat click that went through: the seats it changed (``seatmap_html``'s
    ``seat_updates``), then the cart summary, the cart bar and the notice, swapped in by id."""
    return seat_updates + cart_summary(values) + cart_bar(values) + notice(values)
