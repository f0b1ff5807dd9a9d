"""What the waiting room's panel says (``templates/booking/queue.html#status``): the context for
one answer of the queue, and when the page should look again. Used by the page and its poll
(``queue_views``) and by the pushed updates (``queue_push``)."""

import dataclasses
import random
import re
from datetime import UTC, datetime
from functools import lru_cache

from django.conf import settings
from django.contrib.messages import get_messages
from django.middleware.csrf import get_token
from django.template.loader import render_to_string
from django.utils import timezone, translation
from django.utils.html import escape
from django.utils.translation import gettext, ngettext

from booking.core.formatting import thousands
from booking.sales import waiting_room

TEMPLATE = "booking/queue.html"


def base_context(config: waiting_room.RoomConfig, queue_id) -> dict:
    """What every state of the panel (and the page around it) needs."""
    return {
        "config": config,
        "queue_id": str(queue_id),
        "grace_minutes": max(1, round(settings.BOOKING_QUEUE_GRACE_SECONDS / 60)),
        "admission_minutes": max(1, round(settings.BOOKING_QUEUE_ADMISSION_SECONDS / 60)),
    }


def render_status(context: dict) -> str:
    """The panel alone, in the language active now."""
    return render_to_string(f"{TEMPLATE}#status", context)


# Stand-ins for a waiting buyer's own figures (PanelBatch): numbers no real queue reaches, whose
# plural form is "other" in every language served (as any place from 3 on, and its number ahead).
STAND_IN_POSITION = 9_000_007
STAND_IN_WAITING = 9_100_007
STAND_IN_NEXT_POLL = 987_654.5
STAND_IN_WAIT_TEXT = "wr-stand-in-wait-text"


class PanelBatch:
    """The panels of one look at many waiting buyers, rendered once per kind with stand-ins for
    each buyer's figures, which are then put in for each buyer: the template stays the one source
    of the panel's words, and a look at thousands of buyers costs a few renders.

    Two kinds are shared: in line (places from 3 on; places 1 and 2 have words of their own), which
    differ only in the place, the count waiting, the wait and the next look, per language, rate,
    note; and sold out, the same for everybody (the time held seats may come back) but for the
    next look, which at a sell-out every buyer of a crowded room is shown at once. Any other panel
    is rendered for its buyer. ``POLLED`` is one kept by the process for the polling pages (a
    dict's reads and writes are safe between threads, and two threads rendering the same skeleton
    at once is harmless)."""

    MOST_KEPT = 256

    def __init__(self) -> None:
        self._skeletons: dict[tuple, str | None] = {}

    def render(self, context: dict) -> str:
        """The panel for this context, in the language active now (as ``render_status``)."""
        result, state = context.get("result"), context.get("state")
        language = (translation.get_language(), timezone.get_current_timezone_name())  # the words, the times
        next_poll = {str(STAND_IN_NEXT_POLL): str(context.get("next_poll"))}
        if state == "waiting" and result is not None and result.position > 2:
            key: tuple = (state, context.get("config"), language, result.rate, context.get("note"), result.paused)
            position, ahead, waiting = _stand_in_figures(language[0])
            figures = {
                position: thousands(result.position),
                ahead: thousands(result.position - 1),
                waiting: thousands(result.waiting),
                STAND_IN_WAIT_TEXT: escape(context["wait_text"]),
                **next_poll,
            }
        elif state == "sold_out":
            key = (state, context.get("config"), language, context.get("seats_back_at"), context.get("note"))
            figures = next_poll
        else:
            return render_status(context)
        if key not in self._skeletons:
            if len(self._skeletons) >= self.MOST_KEPT:
                self._skeletons.clear()
            stand_ins: dict = {"next_poll": STAND_IN_NEXT_POLL}
            if state == "waiting" and result is not None:
                stand_ins["result"] = dataclasses.replace(result, position=STAND_IN_POSITION, waiting=STAND_IN_WAITING)
                stand_ins["wait_text"] = STAND_IN_WAIT_TEXT
            rendered = render_status({**context, **stand_ins})
            self._skeletons[key] = rendered if all(stand_in in rendered for stand_in in figures) else None
        skeleton = self._skeletons[key]
        if skeleton is None:  # a stand-in did not come through as written: no shortcut
            return render_status(context)
        return _stand_ins_pattern(tuple(figures)).sub(lambda match: figures[match[0]], skeleton)


@lru_cache(maxsize=16)
def _stand_in_figures(language: str) -> tuple[str, str, str]:
    """The stand-in place, the number ahead of it and the count waiting as the panel writes them
    in this language (the language is active: ``thousands`` reads it)."""
    return thousands(STAND_IN_POSITION), thousands(STAND_IN_POSITION - 1), thousands(STAND_IN_WAITING)


POLLED = PanelBatch()

PAGE_STAND_INS = ("wr-stand-in-page-panel", "wr-stand-in-page-csrf-token", "wr-stand-in-page-next")


class PageSkeletons:
    """The queue page around its panel, rendered once per room, language and time zone, with each
    buyer's own parts put in: the panel (``PanelBatch``), the CSRF token and the page's own address
    (the language switch sends the buyer back to it). In an on-sale rush every arrival opens this
    page, and rendering the whole page for each was a sixth of a web worker's CPU.

    The page is rendered for the first buyer with their own token and address, and each part is
    then looked for exactly as the template wrote it: when one is not found exactly once (or the
    token not as often as the template writes it), that page is not kept and every buyer's is
    rendered whole. A buyer with messages to show gets the page rendered whole too."""

    MOST_KEPT = 64
    TOKENS_IN_PAGE = 2  # the htmx header on <body> and the language switch's form

    def __init__(self, panels: PanelBatch) -> None:
        self.panels = panels
        self._skeletons: dict[tuple, str | None] = {}

    def render(self, request, context: dict) -> str:
        token = get_token(request)
        page_context = {**context, "csrf_token": token}
        if len(get_messages(request)):
            return render_to_string(TEMPLATE, page_context, request)
        key = (
            context["config"],
            context["queue_id"],
            context["grace_minutes"],
            context["admission_minutes"],
            context.get("state") == "no_cookie",  # the page then names no stream
            translation.get_language(),
            timezone.get_current_timezone_name(),
        )
        next_field = f'name="next" value="{escape(request.get_full_path())}"'
        if key not in self._skeletons:
            if len(self._skeletons) >= self.MOST_KEPT:
                self._skeletons.clear()
            page = render_to_string(TEMPLATE, page_context, request)
            self._skeletons[key] = self._cut(page, render_status(context), token, next_field)
            return page
        skeleton = self._skeletons[key]
        if skeleton is None:
            return render_to_string(TEMPLATE, page_context, request)
        panel_stand_in, token_stand_in, next_stand_in = PAGE_STAND_INS
        parts = {panel_stand_in: self.panels.render(context), token_stand_in: token, next_stand_in: next_field}
        return _stand_ins_pattern(PAGE_STAND_INS).sub(lambda match: parts[match[0]], skeleton)

    def kept(self) -> list[str | None]:
        """The pages kept now (None: a page rendered whole for every buyer)."""
        return list(self._skeletons.values())

    def _cut(self, page: str, panel: str, token: str, next_field: str) -> str | None:
        counts = (page.count(panel), page.count(token), page.count(next_field))
        if counts != (1, self.TOKENS_IN_PAGE, 1) or any(stand_in in page for stand_in in PAGE_STAND_INS):
            return None
        panel_stand_in, token_stand_in, next_stand_in = PAGE_STAND_INS
        return page.replace(panel, panel_stand_in).replace(token, token_stand_in).replace(next_field, next_stand_in)


PAGES = PageSkeletons(POLLED)

_patterns: dict[tuple, re.Pattern] = {}


def _stand_ins_pattern(stand_ins: tuple) -> re.Pattern:
    """One pass over the panel for every stand-in (a figure put in is never read again)."""
    pattern = _patterns.get(stand_ins)
    if pattern is None:
        pattern = _patterns[stand_ins] = re.compile("|".join(re.escape(s) for s in stand_ins))
    return pattern


def seconds_until(ms: int, now_ms: int) -> int:
    return max(0, -(-(ms - now_ms) // 1000))


def jitter(seconds: float) -> float:
    """Polls spread out, so the whole room does not ask at the same moment."""
    return round(seconds * random.uniform(0.8, 1.2), 1)  # noqa: S311 - not security


def unavailable_context() -> dict:
    """Redis cannot be reached: the queue is paused for everybody, places kept."""
    return {"state": "unavailable", "next_poll": jitter(max(settings.BOOKING_QUEUE_POLL_SECONDS, 5))}


SOLD_OUT_LOOK_SECONDS = 10  # a sold-out room is looked at this often (held seats may come back)
SCARCE_POLL_SECONDS = 8  # the slowest poll while fewer seats are left than buyers wait


def status_context(
    config: waiting_room.RoomConfig, result: waiting_room.PollResult, *, seats_left: int | None = None
) -> dict:
    """What the panel says for this answer of the queue, and when to look again (``next_poll``).
    ``seats_left``: the seats a buyer could still take, for a polling page: while they are fewer
    than the buyers waiting, it polls at least every ``SCARCE_POLL_SECONDS``, so a sell-out
    reaches it within about that long (a pushed page is told at once, whatever its pace)."""
    fast, slow = settings.BOOKING_QUEUE_POLL_SECONDS, settings.BOOKING_QUEUE_POLL_MAX_SECONDS
    if seats_left is not None and seats_left < result.waiting:
        slow = min(slow, SCARCE_POLL_SECONDS)
    context = {"result": result, "note": result.note}
    if result.state != "waiting" or result.before_sale:  # the room is not open yet, or the sale
        until = seconds_until(result.opens_ms if result.state != "waiting" else result.on_sale_ms, result.now_ms)
        context.update(
            state="not_open" if result.state != "waiting" else "before_sale",
            seconds=until,
            countdown=countdown(until),
            next_poll=jitter(min(slow, max(fast, until / 2))),
        )
        return context
    if result.sold_out:
        back = datetime.fromtimestamp(result.seats_back_ms / 1000, UTC) if result.seats_back_ms else None
        now = datetime.fromtimestamp(result.now_ms / 1000, UTC)
        context.update(sold_out_context(back, now=now, slowest=slow))
        return context
    wait = result.wait_seconds()
    if result.paused or wait is None:  # None only while paused (the rate is at least 1)
        context.update(state="paused", next_poll=jitter(min(slow, max(fast, 5))))
        return context
    # near the front: ask often; far back: rarely (the estimate moves slowly there)
    next_poll = jitter(min(slow, max(fast, wait / 10)))
    context.update(state="waiting", wait=wait, wait_text=wait_text(wait), next_poll=next_poll)
    return context


def sold_out_context(seats_back_at: datetime | None, *, now: datetime, slowest: float) -> dict:
    """The sold-out panel: when held seats may come back (None: nothing held that could), and the
    next look, at most ``slowest`` seconds away."""
    back = max(seats_back_at, now) if seats_back_at is not None else None  # a hold past its end, not yet swept
    return {"state": "sold_out", "seats_back_at": back, "next_poll": jitter(min(slowest, SOLD_OUT_LOOK_SECONDS))}


def countdown(seconds: int) -> str:
    """h:mm:ss (or m:ss under an hour), as queue.js shows it while counting down."""
    hours, rest = divmod(max(0, int(seconds)), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def wait_text(seconds: int | None) -> str:
    if seconds is None:
        return ""
    if seconds < 60:
        return gettext("less than a minute")
    minutes = round(seconds / 60)
    if minutes < 60:
        return ngettext("about %(count)d minute", "about %(count)d minutes", minutes) % {"count": minutes}
    hours, minutes = divmod(minutes, 60)
    return gettext("about %(hours)d h %(minutes)02d min") % {"hours": hours, "minutes": minutes}
