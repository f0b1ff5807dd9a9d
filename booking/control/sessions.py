"""Sessions in the admin: list with sales figures, create (one or a series), edit, the live seat
map with who holds or bought each seat, blocking house seats, cancel.

``SessionAdmin.routes`` is every URL under /admin/booking/session/ with the class and method that
answers it; each group of pages is a ``SessionScreens`` class (control/session_screens.py) in the
module of its subject."""

from django.contrib import messages
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.decorators import method_decorator
from django.utils.translation import gettext, ngettext
from django.views.decorators.http import require_http_methods, require_POST

from booking.control import forms as f
from booking.control import selectors
from booking.control.base import ADDITION, DELETION, MongoModelAdmin, bound, errors_text, route
from booking.control.counter import CounterScreens, may_sell
from booking.control.offers import PriceTableScreens
from booking.control.payment_settings import BoxOfficeScreens, box_office_form
from booking.control.performances import PerformanceScreens
from booking.control.seat_chart import category_legend, owner_groups, session_rows
from booking.control.self_service_settings import SessionSelfServiceScreens, season_form, session_form
from booking.control.series_actions import SeriesActionScreens
from booking.control.session_screens import SessionScreens, session_label
from booking.control.waiting_lists import WaitingListScreens
from booking.core.domain import Session, SessionStatus
from booking.core.errors import BookingError, InvalidRequest
from booking.sales import offers, quotas, seasons, session_cancel
from booking.sales import sessions as session_service
from booking.sales.selectors import seat_counts


class SessionListScreens(SessionScreens):
    """The list of sessions and new ones: one, or a series at once."""

    # --- list ---

    def session_list(self, request):
        self.require(request, "view")
        form = f.SessionFilterForm(request.GET or None, theater_choices=selectors.theater_choices())
        theater_id, day, when = None, None, selectors.SessionsShown.ON_SALE
        status = 200
        if form.is_bound:
            if form.is_valid():
                if form.cleaned_data["theater"]:
                    theater_id = self.document_id(form.cleaned_data["theater"])
                day = form.cleaned_data["day"]
                when = form.cleaned_data["when"] or selectors.SessionsShown.ON_SALE
            else:
                status = 400
        sessions = selectors.staff_sessions(theater_id=theater_id, day=day, when=when) if status == 200 else []
        return self.render(
            request,
            "admin/booking/session/list.html",
            {"title": gettext("Sessions"), "filter": form, "sessions": sessions, "when": when},
            status=status,
        )

    # --- create ---

    def theater_or_pick(self, request, title: str, next_name: str):
        """The theater named by ?theater=, or a page to pick one."""
        raw = request.GET.get("theater")
        if raw:
            return self.document(selectors.get_theater, raw, "No such theater."), None
        choices = selectors.theater_choices()
        form = f.PickTheaterForm(choices=choices)
        page = self.render(
            request,
            "admin/booking/session/pick_theater.html",
            {"title": title, "form": form, "no_theaters": not choices, "next_name": next_name},
            status=400 if request.method == "POST" else 200,  # a post must name its theater
        )
        return None, page

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def session_add(self, request):
        self.require(request, "add")
        theater, page = self.theater_or_pick(request, gettext("Add session: choose the theater"), "add")
        if page:
            return page
        form = f.SessionForm(bound(request), layout=session_service.price_layout(theater))
        session, status = self.posted(
            request,
            form,
            lambda: session_service.create_session(theater["_id"], **form.session_details()),
            action="add",
        )
        if session is not None:
            if session.get("performanceId"):  # a sectioned venue: the performance with its sections
                to = self.url("performance", session["performanceId"])
            else:
                to = self.url("seats", session["_id"])
            return self.session_saved(
                request,
                session,
                flag=ADDITION,
                note=f"Created session in {theater['name']} ({session['seatsTotal']} seats), a draft.",
                shown=gettext(
                    "“%(name)s” was created as a draft (%(seatsTotal)s seats): only staff see it until you publish it."
                )
                % {"name": session["name"], "seatsTotal": session["seatsTotal"]},
                to=to,
            )
        return self.render(
            request,
            "admin/booking/session/form.html",
            {"title": gettext("Add session in %(name)s") % {"name": theater["name"]}, "form": form, "theater": theater},
            status=status,
        )

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def session_series(self, request):
        """A season at once (sales/seasons.py): "Preview" lists the dates, "Create" makes a draft
        per date. The same form submitted again finds its dates and creates nothing new."""
        self.require(request, "add")
        theater, page = self.theater_or_pick(request, gettext("Add a series: choose the theater"), "series")
        if page:
            return page
        form = f.SeriesForm(
            bound(request), layout=session_service.price_layout(theater), ticket_types=offers.ticket_types(theater)
        )
        rules_form = season_form(theater, bound(request))
        created, existing, refused, status, preview = [], [], [], 200, None
        own_rules_bad = rules_form.is_bound and not rules_form.is_valid()
        if request.method == "POST" and (not form.is_valid() or own_rules_bad):
            status = 400
        elif request.method == "POST" and request.POST.get("preview"):
            preview = [start for start, _ in form.performances()]
        elif request.method == "POST":
            data = form.cleaned_data
            try:
                result = seasons.create_season(
                    theater["_id"],
                    key=seasons.season_key(theater_id=theater["_id"], content=form.season_content()),
                    name=data["name"],
                    name_de=data.get("name_de", ""),
                    description=data["description"],
                    performances=form.performances(),
                    prices=form.prices_in_cents(),
                    type_prices=form.type_prices_in_cents(),
                    sale_opens=data.get("sale_opens"),
                    box_office=form.box_office_setting(),
                    self_service=rules_form.own_rules() if rules_form.is_bound else None,
                )
            except InvalidRequest as exc:
                f.add_field_errors(form, exc)
                status = 400
            else:
                refused = result.refused
                existing = [selectors.with_id(s) for s in result.existing]
                for session in result.created:
                    created.append(selectors.with_id(session))
                    self.log(
                        request,
                        ADDITION,
                        session["_id"],
                        session_label(session),
                        f"Created session in {theater['name']} as part of a series.",
                    )
                if created:
                    messages.success(
                        request,
                        gettext("%(count)s sessions of “%(name)s” were created as drafts: publish them to sell.")
                        % {"count": len(created), "name": data["name"]},
                    )
                if refused and not created and not existing:
                    status = 400
        return self.render(
            request,
            "admin/booking/session/series.html",
            {
                "title": gettext("Add a series in %(name)s") % {"name": theater["name"]},
                "form": form,
                "rules_form": rules_form,
                "theater": theater,
                "created": created,
                "existing": existing,
                "refused": refused,
                "preview": preview,
                "series_id": next((s["id"] for s in created + existing if s), ""),
                "done": bool(created or refused or existing),
            },
            status=status,
        )


class SessionChangeScreens(SessionScreens):
    """One session: its details, its sale window, published, deleted or canceled."""

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def session_change(self, request, object_id):
        session = self.session(request, object_id)
        initial = {
            "name": session["name"],
            "description": session.get("description", ""),
            "name_de": session.get("nameDe", ""),
            "description_de": session.get("descriptionDe", ""),
            "start": timezone.localtime(session["start"]),
            "end": timezone.localtime(session["end"]),
            **f.PricedForm.price_initial(session["prices"]),
        }
        form = f.SessionForm(bound(request), initial=initial, layout=session["layout"])
        updated, status = self.posted(
            request, form, lambda: session_service.update_session_details(session["_id"], **form.session_details())
        )
        if updated is not None:
            return self.session_saved(
                request,
                updated,
                note=f"Changed {', '.join(form.changed_data) or 'nothing'}.",
                shown=gettext("“%(name)s” was saved.") % {"name": updated["name"]},
                to=self.url("change", updated["_id"]),
            )
        return self.render(
            request,
            "admin/booking/session/form.html",
            {
                "title": gettext("Change session “%(name)s”") % {"name": session["name"]},
                "form": form,
                "session": session,
                "counts": seat_counts(session["seats"]),
                "box_office_form": box_office_form(session),
                "self_service_form": session_form(session, selectors.get_theater(session["theaterId"])),
            },
            status=status,
        )

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def sale_window(self, request, object_id):
        """Draft or published, the on-sale and off-sale times, a members' presale with its code; and
        the quota, a form of its own on the page."""
        session = self.session(request, object_id)
        local = {k: timezone.localtime(session[k]) if session.get(k) else None for k in ("saleOpens", "saleCloses")}
        presale = session.get("presale")
        initial = {
            "published": "0" if session.get("status") == SessionStatus.DRAFT else "1",
            "sale_opens": local["saleOpens"],
            "sale_closes": local["saleCloses"],
            "presale_opens": timezone.localtime(presale["opens"]) if presale else None,
        }
        quota_post = request.method == "POST" and request.POST.get("what") == "quota"
        quota_form = f.QuotaForm(
            request.POST if quota_post else None,
            initial={"quota": session.get("quota")},
            seats_total=session.get("seatsTotal", 0),
        )
        window_data = None if quota_post else bound(request)
        form = f.SaleWindowForm(window_data, initial=initial, start=session["start"], has_code=bool(presale))
        if quota_post:
            quota, status = self.posted(request, quota_form, lambda: self.set_quota(request, session, quota_form))
            if quota is not None:
                return quota
        else:
            window, status = self.posted(request, form, lambda: self.set_sale_window(request, session, form))
            if window is not None:
                return window
        return self.render(
            request,
            "admin/booking/session/sale_window.html",
            {
                "title": gettext("Sale window of “%(name)s”") % {"name": session["name"]},
                "form": form,
                "quota_form": quota_form,
                "quota_line": quotas.quota_line(session),
                "sectioned": session.get("performanceId") is not None,
                "session": session,
            },
            status=status,
        )

    def set_sale_window(self, request, session: Session, form: f.SaleWindowForm) -> HttpResponseRedirect:
        """The sale window form's write, logged, and back to the page."""
        data = form.cleaned_data
        updated = session_service.set_sale_window(
            session["_id"],
            published=data["published"],
            sale_opens=data["sale_opens"],
            sale_closes=data["sale_closes"],
            presale_opens=data["presale_opens"],
            presale_code=data["presale_code"],
        )
        what = "published" if data["published"] else "draft"
        note = f"Sale window: {what}, on sale {data['sale_opens'] or 'when published'}, "
        note += f"off sale {data['sale_closes'] or 'at the start'}"
        note += f", presale from {data['presale_opens']}" if data["presale_opens"] else ""
        note += " (new access code)" if data["presale_code"] else ""
        return self.session_saved(
            request,
            updated,
            note=note + ".",
            shown=gettext("The sale window of “%(name)s” was saved.") % {"name": updated["name"]},
            to=self.url("sale_window", updated["_id"]),
        )

    def set_quota(self, request, session: Session, form: f.QuotaForm) -> HttpResponseRedirect:
        """The quota form's write, logged, and back to the page."""
        quota = form.cleaned_data["quota"]
        updated = quotas.set_quota(session["_id"], quota=quota)
        shown = (
            gettext("The quota of “%(name)s” is %(quota)d seats.") % {"name": updated["name"], "quota": quota}
            if quota is not None
            else gettext("“%(name)s” has no quota now.") % {"name": updated["name"]}
        )
        return self.session_saved(
            request,
            updated,
            note=f"Quota: {quota if quota is not None else 'none'}.",
            shown=shown,
            to=self.url("sale_window", updated["_id"]),
        )


class SeatMapScreens(SessionScreens):
    """A session's live seat map: who holds or bought each seat, house seats blocked and released."""

    def seat_map_context(self, request, session: Session, checked=frozenset()) -> dict:
        rows = session_rows(session, selectors.seat_owners(session), set(checked))
        return {
            "session": session,
            "rows": rows,
            "owners": owner_groups(rows),
            "legend": category_legend(session["layout"]),
            "counts": seat_counts(session["seats"]),
            # house seats are blocked in a draft too (it is prepared before it goes on sale)
            "selectable": self.admin.has_change_permission(request) and session.get("status") != SessionStatus.CANCELED,
            "now": timezone.now(),
        }

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def seat_map(self, request, object_id):
        """The live seat map. POST blocks or unblocks the ticked seats (house seats)."""
        session = self.session(request, object_id)
        status, error = 200, ""
        checked = set(request.POST.getlist("seats"))
        if request.method == "POST":
            self.require(request, "change")
            form = f.SeatSelectionForm(request.POST, seat_keys=_seat_keys(session))
            if not form.is_valid():
                status, error = 400, errors_text(form)
            else:
                block = form.cleaned_data["action"] == "block"
                try:
                    count = session_service.set_blocked(session["_id"], form.coordinates(), block)
                except BookingError as exc:
                    status, error = 409, exc.message
                else:
                    what = "Blocked" if block else "Released"
                    seats = ", ".join(form.cleaned_data["seats"])
                    if block:
                        shown = ngettext(
                            "Blocked %(count)d seat (house seats, not for sale).",
                            "Blocked %(count)d seats (house seats, not for sale).",
                            count,
                        )
                    else:
                        shown = ngettext(
                            "Released %(count)d seat (on sale again).",
                            "Released %(count)d seats (on sale again).",
                            count,
                        )
                    return self.session_saved(
                        request,
                        session,
                        note=f"{what} {count} seat{'s' if count != 1 else ''} ({seats}).",
                        shown=shown % {"count": count},
                        to=self.url("seats", session["_id"]),
                    )
            session = self.session_named(object_id)
        context = {
            "title": gettext("Seat map: %(name)s") % {"name": session["name"]},
            "error": error,
            **self.seat_map_context(request, session, checked),
        }
        return self.render(request, "admin/booking/session/seatmap.html", context, status=status)

    def seat_map_partial(self, request, object_id):
        """htmx poll: the map again, keeping the seats staff have ticked (sent along)."""
        session = self.session(request, object_id)
        context = self.seat_map_context(request, session, request.GET.getlist("seats"))
        return TemplateResponse(request, "admin/booking/session/_live_map.html", context)

    @method_decorator(require_POST)
    def refresh_map(self, request, object_id):
        session = self.session(request, object_id, "change")
        try:
            updated = session_service.refresh_seat_map(session["_id"])
        except BookingError as exc:
            return self.refused(request, exc.message, self.url("change", session["_id"]))
        return self.session_saved(
            request,
            session,
            note=f"Copied the theater's current seat map ({updated['seatsTotal']} seats).",
            shown=gettext("The seat map now matches the theater (%(seatsTotal)s seats).")
            % {"seatsTotal": updated["seatsTotal"]},
            to=self.url("seats", session["_id"]),
        )


class SessionStatusScreens(SessionScreens):
    """A draft published or deleted, a session canceled."""

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def session_cancel(self, request, object_id):
        """Cancel a session. Staff need the delete permission: it ends the session for good."""
        session = self.session(request, object_id, "delete")
        paid = selectors.paid_order_count(session["_id"])
        form = f.CancelSessionForm(bound(request))
        if request.method == "POST" and form.is_valid() and session.get("status") == SessionStatus.CANCELED:
            messages.info(request, gettext("This session was already canceled."))
            return HttpResponseRedirect(self.url("change", session["_id"]))
        canceled, status = self.posted(
            request,
            form,
            lambda: session_service.cancel_session(
                session["_id"],
                cancel_orders=form.cleaned_data["cancel_orders"],
                by=request.user.get_username(),
                **form.terms(),
            ),
            action="delete",
            conflict_field="cancel_orders",
        )
        if canceled is not None:
            note = f" and canceled {canceled} paid order{'s' if canceled != 1 else ''}" if canceled else ""
            shown = ngettext(
                "“%(name)s” was canceled; its %(count)d paid order is being refunded.",
                "“%(name)s” was canceled; its %(count)d paid orders are being refunded.",
                canceled,
            )
            return self.session_saved(
                request,
                session,
                note=f"Canceled the session{note}.",
                shown=(shown if canceled else gettext("“%(name)s” was canceled."))
                % {"name": session["name"], "count": canceled},
                # the worker refunds them: its progress is on the cancel page
                to=self.url("cancel" if canceled else "change", session["_id"]),
            )
        return self.render(
            request,
            "admin/booking/session/cancel.html",
            {
                "title": gettext("Cancel “%(name)s”?") % {"name": session["name"]},
                "session": session,
                "paid": paid,
                "holds": len(session.get("reservations", [])),
                "form": form,
                "progress": session_cancel.progress(session),  # its orders, refunded by the worker
            },
            status=status,
        )

    def _draft_action(self, request, object_id, *, action: str):
        """Publish a draft, or delete a session nobody bought from: GET asks, POST does it; a
        refusal is shown on the same page with a 409, and nothing changed."""
        session = self.session(request, object_id, "change" if action == "publish" else "delete")
        error, status = "", 200
        if request.method == "POST":
            try:
                if action == "publish":
                    count = session_service.publish_session(session["_id"])
                else:
                    count = session_service.delete_session(session["_id"])
            except BookingError as exc:
                error, status = exc.message, 409
            else:
                if action == "publish":
                    return self.session_saved(
                        request,
                        session,
                        note=f"Published ({count} session document{'s' if count != 1 else ''}).",
                        shown=gettext("“%(name)s” is published: it is on sale (or on its sale window).")
                        % {"name": session["name"]},
                        to=self.url("change", session["_id"]),
                    )
                return self.session_saved(
                    request,
                    session,
                    flag=DELETION,
                    note=f"Deleted ({count} session document{'s' if count != 1 else ''}).",
                    shown=gettext("“%(name)s” was deleted.") % {"name": session["name"]},
                    to=self.url("changelist"),
                )
        titles = {
            "publish": gettext("Publish “%(name)s”?"),
            "delete": gettext("Delete “%(name)s”?"),
        }
        return self.render(
            request,
            "admin/booking/session/draft_action.html",
            {
                "title": titles[action] % {"name": session["name"]},
                "session": session,
                "action": action,
                "error": error,
                "counts": seat_counts(session["seats"]),
            },
            status=status,
        )

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def session_publish(self, request, object_id):
        return self._draft_action(request, object_id, action="publish")

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def session_delete(self, request, object_id):
        return self._draft_action(request, object_id, action="delete")


def _seat_keys(session: Session) -> list[str]:
    return [
        f"{r}:{c}" for r, row in enumerate(session["layout"]["rows"]) for c, cell in enumerate(row["cells"]) if cell
    ]


class SessionAdmin(MongoModelAdmin):
    """/admin/booking/session/: each URL, the class and method that answer it, and its name (the
    URL names are ``admin:booking_session_<name>``)."""

    routes = [
        route("<str:object_id>/prices/", PriceTableScreens.price_table, "price_table"),
        route("", SessionListScreens.session_list, "changelist"),
        route("add/", SessionListScreens.session_add, "add"),
        route("add-series/", SessionListScreens.session_series, "series"),
        route("<str:object_id>/change/", SessionChangeScreens.session_change, "change"),
        route("<str:object_id>/seats/", SeatMapScreens.seat_map, "seats"),
        route("<str:object_id>/seats/map/", SeatMapScreens.seat_map_partial, "seats_partial"),
        route("<str:object_id>/refresh-map/", SeatMapScreens.refresh_map, "refresh_map"),
        route("<str:object_id>/cancel/", SessionStatusScreens.session_cancel, "cancel"),
        route("<str:object_id>/publish/", SessionStatusScreens.session_publish, "publish"),
        route("<str:object_id>/delete/", SessionStatusScreens.session_delete, "delete"),
        route("<str:object_id>/sale-window/", SessionChangeScreens.sale_window, "sale_window"),
        route("<str:object_id>/box-office/", BoxOfficeScreens.session_box_office, "box_office"),
        route("<str:object_id>/self-service/", SessionSelfServiceScreens.session_self_service, "self_service"),
        # selling at the counter and on the phone: its own permission, booking.sell_at_counter
        route("<str:object_id>/sell/", CounterScreens.sell_page, "sell"),
        route("<str:object_id>/sell/map/", CounterScreens.sell_map, "sell_map"),
        route("<str:object_id>/sell/toggle", CounterScreens.sell_toggle, "sell_toggle"),
        route("<str:object_id>/sell/best", CounterScreens.sell_best, "sell_best"),
        route("<str:object_id>/sell/release", CounterScreens.sell_release, "sell_release"),
        route("<str:object_id>/sell/ticket-type", CounterScreens.sell_ticket_type, "sell_ticket_type"),
        route("<str:object_id>/sell/promo", CounterScreens.sell_promo, "sell_promo"),
        route("<str:object_id>/sell/checkout", CounterScreens.sell_checkout, "sell_checkout"),
        route("sold/<str:ref>/", CounterScreens.sold_page, "sold"),
        route("sold/<str:ref>/tickets.pdf", CounterScreens.sold_tickets_pdf, "sold_tickets"),
        # a sectioned venue's performance: its sections as one
        route("performance/<str:performance_id>/", PerformanceScreens.performance_page, "performance"),
        route("performance/<str:performance_id>/cancel/", PerformanceScreens.performance_cancel, "performance_cancel"),
        route("performance/<str:performance_id>/change/", PerformanceScreens.performance_change, "performance_change"),
        route("<str:object_id>/series-actions/", SeriesActionScreens.series_actions, "series_actions"),
        route("<str:object_id>/waiting-list/", WaitingListScreens.waiting_list, "waiting_list"),
    ]

    def has_view_permission(self, request, obj=None):
        """Sellers at the counter see the sessions too (to pick one to sell)."""
        return super().has_view_permission(request, obj) or may_sell(request.user)
