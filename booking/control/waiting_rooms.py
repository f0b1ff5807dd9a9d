"""Waiting rooms in the admin: mark a session, a sectioned performance or a series
"high demand"; watch each queue live (waiting, rate, admitted, buying, done, left); pause,
resume, change the rate or the times live; end the room.

The settings live on the session documents and the queue in Redis (sales/waiting_room.py);
everything here goes through that service. Permissions are the ``WaitingRoom`` stand-in model's
(booking/models.py): view to watch, add to open a room, change to pause/resume/re-rate, delete
to end one.
"""

from datetime import timedelta
from functools import partial
from typing import cast

from django import forms
from django.contrib import messages
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.decorators import method_decorator
from django.utils.translation import gettext, gettext_lazy
from django.views.decorators.http import require_http_methods, require_POST

from booking.control.base import ADDITION, CHANGE, DELETION, MongoModelAdmin, bound
from booking.control.forms import LocalDateTimeField, add_field_errors, form_data
from booking.core import clock, mongo
from booking.core.domain import SessionStatus
from booking.core.errors import BookingError, InvalidRequest
from booking.core.formatting import performance_start
from booking.sales import selectors as buyer_selectors
from booking.sales import waiting_room


def room_label(config: waiting_room.RoomConfig) -> str:
    start = timezone.localtime(config.start).strftime("%a %d %b %Y %H:%M")
    return f"Waiting room: {config.name} – {start}"


class RateForm(forms.Form):
    rate = forms.IntegerField(
        label=gettext_lazy("Admission rate (buyers per minute)"),
        min_value=1,
        max_value=waiting_room.MAX_RATE,
        widget=forms.NumberInput(attrs={"size": 6}),
    )


class TimesForm(forms.Form):
    opens_at = LocalDateTimeField(label=gettext_lazy("Waiting room opens"))
    on_sale_at = LocalDateTimeField(
        label=gettext_lazy("Sale opens"),
        help_text=gettext_lazy(
            "Everybody who is in the waiting room by then gets a place by lot; later arrivals queue behind."
        ),
    )

    def clean(self):
        data = form_data(super().clean())
        if data.get("opens_at") and data.get("on_sale_at") and data["opens_at"] > data["on_sale_at"]:
            self.add_error("opens_at", gettext("The waiting room must open before (or when) the sale does."))
        return data


class EnableForm(TimesForm, RateForm):
    target = forms.ChoiceField(label=gettext_lazy("Performance"))
    series = forms.BooleanField(
        label=gettext_lazy("Every upcoming performance of this show in this hall"),
        required=False,
        help_text=gettext_lazy("A series: each performance gets a waiting room of its own, with these settings."),
    )

    field_order = ["target", "series", "opens_at", "on_sale_at", "rate"]

    def __init__(self, *args, choices=(), **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["target"]).choices = [("", gettext("— choose —")), *choices]


def performance_choices() -> list[tuple[str, str]]:
    """Upcoming performances on sale (a sectioned one once, by its performance id)."""
    choices = []
    for s in buyer_selectors.upcoming_sessions():
        label = f"{s['name']} – {performance_start(s['start'])} – {s.get('theaterName', '')}"
        if s.get("sections"):
            label += " " + gettext("(%(sections)s sections, one queue)") % {"sections": s["sections"]}
        choices.append((str(s["_id"]), label))
    return choices


def series_of(target_id) -> list:
    """The upcoming performances of the same show in the same hall as this one (itself included)."""
    doc = mongo.sessions().find_one({"$or": [{"_id": target_id}, {"performanceId": target_id}]})
    if doc is None:
        return [target_id]
    upcoming = {"status": SessionStatus.ON_SALE, "start": {"$gt": clock.now()}}
    query = {"name": doc["name"], "theaterId": doc["theaterId"], **upcoming}
    ids = []
    for s in mongo.sessions().find(query, {"performanceId": 1}).sort("start", 1):
        one = s.get("performanceId") or s["_id"]
        if one not in ids:
            ids.append(one)
    return ids or [target_id]


class WaitingRoomAdmin(MongoModelAdmin):
    routes = [
        ("", "room_list", "changelist"),
        ("add/", "room_add", "add"),
        ("<str:object_id>/change/", "room_detail", "change"),
        ("<str:object_id>/stats/", "room_stats", "stats"),
        ("<str:object_id>/pause/", "room_pause", "pause"),
        ("<str:object_id>/resume/", "room_resume", "resume"),
        ("<str:object_id>/end/", "room_end", "end"),
    ]

    def _config(self, object_id) -> waiting_room.RoomConfig:
        return self.document(partial(waiting_room.get_config, fresh=True), object_id, "No such waiting room.")

    # --- list ---

    def room_list(self, request):
        self.require(request, "view")
        rows = [{"config": c, "stats": waiting_room.stats(c)} for c in waiting_room.rooms()]
        context = {"title": gettext("Waiting rooms"), "rows": rows, "now": clock.now()}
        return self.render(request, "admin/booking/waitingroom/list.html", context)

    # --- open a room ---

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def room_add(self, request):
        self.require(request, "add")
        now = timezone.localtime(clock.now()).replace(second=0, microsecond=0)
        initial = {"rate": 100, "opens_at": now, "on_sale_at": now + timedelta(minutes=30)}
        form = EnableForm(bound(request), initial=initial, choices=performance_choices())
        status, opened, refused = 200, [], []
        if request.method == "POST":
            status = 400
            if form.is_valid():
                data = form.cleaned_data
                target = self.document_id(data["target"])
                for one in series_of(target) if data["series"] else [target]:
                    try:
                        config = waiting_room.enable(
                            one, opens_at=data["opens_at"], on_sale_at=data["on_sale_at"], rate=data["rate"]
                        )
                    except InvalidRequest as exc:
                        if one == target and not data["series"]:
                            add_field_errors(form, exc)
                        refused.append(exc.message)
                    except BookingError as exc:
                        refused.append(exc.message)
                    else:
                        opened.append(config)
                        self.log(
                            request,
                            ADDITION,
                            config.queue_id,
                            room_label(config),
                            f"Opened a waiting room: opens {data['opens_at']:%Y-%m-%d %H:%M}, "
                            f"sale {data['on_sale_at']:%Y-%m-%d %H:%M}, {data['rate']} buyers a minute.",
                        )
                if opened:
                    names = ", ".join(performance_start(c.start) for c in opened)
                    messages.success(
                        request,
                        gettext("Waiting room opened for %(count)s performance(s): %(names)s.")
                        % {"count": len(opened), "names": names},
                    )
                    for reason in refused:
                        messages.warning(
                            request, gettext("Not opened for one performance: %(reason)s") % {"reason": reason}
                        )
                    if len(opened) == 1:
                        return HttpResponseRedirect(self.url("change", opened[0].queue_id))
                    return HttpResponseRedirect(self.url("changelist"))
                if refused and not form.errors:
                    form.add_error(None, " ".join(dict.fromkeys(refused)))
        choices = cast(list, cast(forms.ChoiceField, form.fields["target"]).choices)  # the field keeps a list
        return self.render(
            request,
            "admin/booking/waitingroom/add.html",
            {"title": gettext("Open a waiting room"), "form": form, "no_choices": len(choices) == 1},
            status=status,
        )

    # --- one room ---

    def _detail_context(self, request, config, rate_form=None, times_form=None) -> dict:
        return {
            "config": config,
            "queue_id": str(config.queue_id),
            "stats": waiting_room.stats(config),
            "rate_form": rate_form or RateForm(initial={"rate": config.rate}),
            "times_form": times_form
            or TimesForm(
                initial={
                    "opens_at": timezone.localtime(config.opens_at),
                    "on_sale_at": timezone.localtime(config.on_sale_at),
                }
            ),
            "now": clock.now(),
        }

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def room_detail(self, request, object_id):
        """The live dashboard; POST changes the rate (``rate``) or the times (``opens_at``...)."""
        self.require(request, "view")
        config = self._config(object_id)
        rate_form = times_form = None
        status = 200
        if request.method == "POST":
            self.require(request, "change")
            status = 400
            if "rate" in request.POST:
                rate_form = RateForm(request.POST)
                changed = rate_form.is_valid() and self._change(request, config, rate_form)
            else:
                times_form = TimesForm(request.POST)
                changed = times_form.is_valid() and self._change(request, config, times_form)
            if changed:
                return HttpResponseRedirect(self.url("change", config.queue_id))
        title = gettext("Waiting room: %(name)s – %(start)s") % {
            "name": config.name,
            "start": performance_start(config.start),
        }
        context = {"title": title, **self._detail_context(request, config, rate_form, times_form)}
        return self.render(request, "admin/booking/waitingroom/detail.html", context, status=status)

    def _change(self, request, config, form) -> bool:
        changes = dict(form.cleaned_data)
        try:
            updated = waiting_room.change(config.queue_id, **changes)
        except InvalidRequest as exc:
            add_field_errors(form, exc)
            return False
        labels = {"opens_at": "opening", "on_sale_at": "sale"}
        what = ", ".join(
            f"rate {updated.rate}/min" if k == "rate" else f"{labels[k]} {timezone.localtime(v):%Y-%m-%d %H:%M}"
            for k, v in changes.items()
        )
        self.log(request, CHANGE, config.queue_id, room_label(updated), f"Changed {what}.")
        messages.success(request, gettext("Changed %(what)s. It applies from now on.") % {"what": what})
        return True

    def room_stats(self, request, object_id):
        """htmx poll: the figures again."""
        self.require(request, "view")
        config = self._config(object_id)
        context = {**self.admin_site.each_context(request), **self._detail_context(request, config)}
        return TemplateResponse(request, "admin/booking/waitingroom/detail.html#stats", context)

    @method_decorator(require_POST)
    def room_pause(self, request, object_id):
        return self._pause(request, object_id, True)

    @method_decorator(require_POST)
    def room_resume(self, request, object_id):
        return self._pause(request, object_id, False)

    def _pause(self, request, object_id, paused: bool):
        self.require(request, "change")
        config = self._config(object_id)
        updated = waiting_room.pause(config.queue_id) if paused else waiting_room.resume(config.queue_id)
        if paused:
            note = "Paused admission."
            shown = gettext("Paused admission. Nobody is let in; everybody keeps their place.")
        else:
            note = "Resumed admission."
            shown = gettext("Resumed admission. Buyers are let in again.")
        to = self.url("change", config.queue_id)
        return self.saved(request, CHANGE, config.queue_id, room_label(updated), note=note, shown=shown, to=to)

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def room_end(self, request, object_id):
        self.require(request, "delete")
        config = self._config(object_id)
        if request.method == "POST":
            count = waiting_room.disable(config.queue_id)
            return self.saved(
                request,
                DELETION,
                config.queue_id,
                room_label(config),
                note="Ended the waiting room.",
                shown=gettext("The waiting room has ended; seats are sold to everybody (%(count)s session(s)).")
                % {"count": count},
                to=self.url("changelist"),
            )
        return self.render(
            request,
            "admin/booking/waitingroom/end.html",
            {
                "title": gettext("End the waiting room of “%(name)s”?") % {"name": config.name},
                "config": config,
                "stats": waiting_room.stats(config),
            },
        )
