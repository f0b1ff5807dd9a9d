"""The door check-in pages (``/checkin/``), for door staff on a phone. The engine is
``sales/checkin.py``; ``static/checkin/door.js`` does the camera, the offline list and the
queue. Every endpoint needs the ``booking.checkin_tickets`` permission (superusers have it).

GET  /checkin/                         performances a door may be checking (today, the next days)
GET  /checkin/login/, POST /checkin/logout/   a login of its own: door staff need no admin access
GET  /checkin/sw.js                    the service worker (scope /checkin/): caches page and assets
GET  /checkin/<id>/                    the door page; ?q= searches (works without JavaScript too)
POST /checkin/<id>/scan                code=<ticket code> | hash=<sha256>, door, scan=<id>   check in
                                       JSON answer when asked for (Accept: application/json), else the page
POST /checkin/<id>/undo                code=<ticket code> | hash=<sha256>   take a check-in back (409: not
                                       checked in, or changed meanwhile)
GET  /checkin/<id>/search?q=           tickets by name or booking reference (JSON)
GET  /checkin/<id>/tickets.json        the offline list: hashed codes, seat, type, short name
POST /checkin/<id>/sync                JSON {scans: [{id, code|hash, at, door}]}: check-ins made offline
GET  /checkin/<id>/stats               checked in / sold, by door, and the conflicts (JSON)
POST /checkin/<id>/conflicts/<cid>/seen   a conflict is marked as seen by staff

<id> is a session's id or a sectioned performance's. Bad input answers 400 (JSON with a message
for the JSON endpoints), never 500; every POST needs the CSRF token (X-CSRFToken header).
"""

import functools
import hashlib
import json
from datetime import datetime
from pathlib import Path

from bson import ObjectId
from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.staticfiles import finders
from django.core.serializers.json import DjangoJSONEncoder
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext, pgettext
from django.views.decorators.http import require_POST, require_safe

from booking.checkin.presenters import conflict_data, outcome_data, seat_text
from booking.core.errors import BookingError, Conflict, InvalidRequest, NotFound
from booking.core.ids import object_id
from booking.models import CHECKIN_PERMISSION
from booking.sales import checkin
from booking.web.login_lockout import DoorLoginForm

PERMISSION = CHECKIN_PERMISSION
SYNC_BATCH_LIMIT = 200
# What the service worker keeps for offline use, besides the pages a door opened.
OFFLINE_ASSETS = ["checkin/door.css", "checkin/door.js", "vendor/jsqr-1.4.0/jsQR.js"]


class Encoder(DjangoJSONEncoder):
    def default(self, o):
        if isinstance(o, ObjectId):
            return str(o)
        return super().default(o)


def _json(data, status: int = 200) -> JsonResponse:
    response = JsonResponse(data, status=status, encoder=Encoder)
    response["Cache-Control"] = "no-store"
    return response


def _wants_json(request) -> bool:
    return "application/json" in request.headers.get("Accept", "") or request.content_type == "application/json"


def door_staff_only(view):
    """Signed in with the check-in permission: else the login (pages) or 403 (JSON, forbidden)."""

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        if not request.user.is_authenticated:
            if request.method in ("GET", "HEAD") and not _wants_json(request):
                return redirect(f"{reverse('checkin:login')}?next={request.get_full_path()}")
            return _json({"error": gettext("Please sign in again."), "signedOut": True}, 403)
        if not request.user.has_perm(PERMISSION):
            message = gettext("Your account may not check in tickets. Ask a manager for the door check-in permission.")
            if _wants_json(request):
                return _json({"error": message}, 403)
            return render(request, "checkin/forbidden.html", {"message": message}, status=403)
        return view(request, *args, **kwargs)

    return wrapped


def _scope(scope_id: str) -> checkin.Scope:
    return checkin.get_scope(object_id(scope_id, "performance"))


def _problem(request, error: BookingError, status: int | None = None):
    status = status or (404 if isinstance(error, NotFound) else 400)
    if _wants_json(request):
        return _json({"error": error.message}, status)
    template = "404.html" if status == 404 else "400.html"
    return render(request, template, {"message": error.message}, status=status)


def staff_name(user) -> str:
    return user.get_username()


def _local(value):
    return timezone.localtime(value) if isinstance(value, datetime) else value


# --- the service worker ---


@functools.cache
def offline_version() -> str:
    """Changes whenever an asset the service worker keeps changes (so phones fetch them anew)."""
    digest = hashlib.sha256()
    for name in [
        *OFFLINE_ASSETS,
        "../templates/checkin/sw.js",
        "../templates/checkin/door.html",
        "../locale/de/LC_MESSAGES/djangojs.po",  # the door script's words (Django's JavaScript catalog)
    ]:
        path = finders.find(name) if not name.startswith("../") else Path(settings.BASE_DIR) / name[3:]
        if path and Path(path).exists():
            digest.update(Path(path).read_bytes())
    return digest.hexdigest()[:12]


@require_safe
def service_worker(request):
    body = render(
        request,
        "checkin/sw.js",
        {  # JSON is JavaScript: the values go in as literals (this is a script, not HTML)
            "version_json": json.dumps(offline_version()),
            "assets_json": json.dumps([*(static(name) for name in OFFLINE_ASSETS), reverse("javascript-catalog")]),
            "scope_json": json.dumps(reverse("checkin:index")),
        },
        content_type="text/javascript",
    )
    body["Cache-Control"] = "no-cache"
    return body


# --- pages ---


class DoorLoginView(auth_views.LoginView):
    template_name = "checkin/login.html"
    form_class = DoorLoginForm  # says when too many failures stopped a sign-in (answered 429)
    redirect_authenticated_user = False

    def get_default_redirect_url(self):
        return reverse("checkin:index")


class DoorLogoutView(auth_views.LogoutView):
    next_page = "checkin:login"


@require_safe
@door_staff_only
def index(request):
    performances = checkin.door_sessions()
    now = timezone.now()
    for p in performances:
        p["id"] = str(p["_id"])
        p["startLocal"] = timezone.localtime(p["start"])
        p["started"] = p["start"] <= now
    return render(request, "checkin/index.html", {"performances": performances})


def _page_context(request, scope: checkin.Scope, **extra) -> dict:
    scope_id = str(scope.id)
    urls = {
        "root": reverse("checkin:index"),
        "page": reverse("checkin:door", args=[scope_id]),
        "scan": reverse("checkin:scan", args=[scope_id]),
        "sync": reverse("checkin:sync", args=[scope_id]),
        "tickets": reverse("checkin:tickets", args=[scope_id]),
        "stats": reverse("checkin:stats", args=[scope_id]),
        "search": reverse("checkin:search", args=[scope_id]),
        "undo": reverse("checkin:undo", args=[scope_id]),
        "seen": reverse("checkin:seen", args=[scope_id, "000000000000000000000000"]),
        "sw": reverse("checkin:sw"),
        "login": reverse("checkin:login"),
    }
    counts = checkin.counts(scope)
    config = {
        "scope": scope_id,
        "name": scope.name,
        "start": scope.start,
        "sectioned": scope.sectioned,
        "wholeBooking": scope.whole_booking,  # offline too: one scan admits the booking's listed tickets
        "user": staff_name(request.user),
        "timeZone": settings.TIME_ZONE,
        "locale": pgettext("BCP 47 locale of the door page's clock times (24-hour)", "en-GB"),
        "offlineVersion": offline_version(),
        "urls": urls,
    }
    return {
        "scope": scope,
        "start": timezone.localtime(scope.start),
        "counts": counts,
        "conflicts": [conflict_data(c) for c in checkin.conflicts(scope, limit=20)],
        "config": config,
        "door": request.POST.get("door") or request.GET.get("door") or "",
        **extra,
    }


@require_safe
@door_staff_only
def door_page(request, scope_id):
    try:
        scope = _scope(scope_id)
    except NotFound as exc:
        return _problem(request, exc)
    hits, search_error = None, ""
    text = request.GET.get("q", "")
    if text:
        try:
            hits = checkin.search(scope, text)
        except InvalidRequest as exc:
            search_error = exc.message
    response = render(
        request,
        "checkin/door.html",
        _page_context(request, scope, hits=hits, q=text, search_error=search_error),
        status=400 if search_error else 200,
    )
    response["Cache-Control"] = "no-cache"
    return response


# --- checking in ---


@require_POST
@door_staff_only
def scan(request, scope_id):
    """One check-in: ``code`` (scanned or typed) or ``hash`` (a search hit), at ``door``."""
    try:
        scope = _scope(scope_id)
        data = _body(request) if request.content_type == "application/json" else request.POST
        code, digest = data.get("code"), data.get("hash")
        if not code and not digest:
            raise InvalidRequest(gettext("Scan a ticket or type its code."))
        outcome = checkin.check_in(
            scope,
            door=data.get("door"),
            by=staff_name(request.user),
            code=code or None,
            digest=None if code else digest,
            scan_id=data.get("scan") or None,
        )
    except BookingError as exc:
        return _problem(request, exc)
    if _wants_json(request):
        return _json(outcome_data(outcome))
    result = outcome_data(outcome)
    if result["used"]:
        result["used"] = {**result["used"], "at": _local(result["used"]["at"])}
    if result["session"]:
        result["session"] = {**result["session"], "start": _local(result["session"]["start"])}
    return render(request, "checkin/door.html", _page_context(request, scope, result=result))


@require_POST
@door_staff_only
def undo(request, scope_id):
    """Take a check-in back: ``code`` or ``hash``. The page (or JSON) says whose ticket it was."""
    try:
        scope = _scope(scope_id)
        data = _body(request) if request.content_type == "application/json" else request.POST
        code, digest = data.get("code"), data.get("hash")
        if not code and not digest:
            raise InvalidRequest(gettext("Scan a ticket or type its code."))
        ticket = checkin.undo_check_in(
            scope, by=staff_name(request.user), code=code or None, digest=None if code else digest
        )
    except Conflict as exc:
        return _problem(request, exc, 409)
    except BookingError as exc:
        return _problem(request, exc)
    message = gettext("Check-in undone: %(seat)s, %(name)s.") % {"seat": seat_text(ticket), "name": ticket["name"]}
    if _wants_json(request):
        return _json({"undone": True, "ticket": ticket, "message": message, "counts": checkin.counts(scope)})
    return render(request, "checkin/door.html", _page_context(request, scope, undone=message))


def _body(request) -> dict:
    try:
        data = json.loads(request.body or b"{}")
    except (ValueError, UnicodeDecodeError):
        raise InvalidRequest(gettext("The request was not JSON.")) from None
    if not isinstance(data, dict):
        raise InvalidRequest(gettext("The request was not a JSON object."))
    return data


def _scan_time(value) -> datetime:
    if not isinstance(value, str) or len(value) > 40:
        raise InvalidRequest(gettext("A queued check-in needs the time it was scanned."))
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise InvalidRequest(gettext("A queued check-in's time is not a date.")) from None


@require_POST
@door_staff_only
def sync(request, scope_id):
    """Check-ins a door made offline, in the order it made them. Each gets its own answer; one
    that no longer admits is stored as a conflict and comes back with it."""
    try:
        scope = _scope(scope_id)
        data = _body(request)
        scans = data.get("scans")
        if not isinstance(scans, list) or len(scans) > SYNC_BATCH_LIMIT:
            raise InvalidRequest(
                gettext("Send the queued check-ins as a list of at most %(limit)s.") % {"limit": SYNC_BATCH_LIMIT}
            )
    except BookingError as exc:
        return _problem(request, exc)
    results = []
    for item in scans:
        scan_id = item.get("id") if isinstance(item, dict) else None
        try:
            if not isinstance(item, dict) or not isinstance(scan_id, str) or not scan_id:
                raise InvalidRequest(gettext("A queued check-in without its id."))
            code, digest = item.get("code"), item.get("hash")
            if (
                not isinstance(code, str | type(None))
                or not isinstance(digest, str | type(None))
                or not (code or digest)
            ):
                raise InvalidRequest(gettext("A queued check-in without its ticket."))
            outcome = checkin.check_in(
                scope,
                door=item.get("door") or data.get("door"),
                by=staff_name(request.user),
                code=code or None,
                digest=None if code else digest,
                scan_id=scan_id,
                at=_scan_time(item.get("at")),
                offline=True,
            )
        except BookingError as exc:
            results.append(
                {"id": scan_id if isinstance(scan_id, str) else None, "status": "invalid", "message": exc.message}
            )
            continue
        results.append({"id": scan_id, **outcome_data(outcome)})
    return _json({"results": results, "counts": checkin.counts(scope)})


@require_POST
@door_staff_only
def seen(request, scope_id, conflict_id):
    try:
        scope = _scope(scope_id)
        conflict = object_id(conflict_id, "conflict")
    except BookingError as exc:
        return _problem(request, exc)
    changed = checkin.acknowledge_conflict(scope, conflict, staff_name(request.user))
    if _wants_json(request):
        return _json({"seen": changed})
    return redirect("checkin:door", scope_id=str(scope.id))


# --- what the door reads ---


@require_safe
@door_staff_only
def search(request, scope_id):
    try:
        scope = _scope(scope_id)
        hits = checkin.search(scope, request.GET.get("q", ""))
    except BookingError as exc:
        return _problem(request, exc)
    return _json({"hits": hits})


@require_safe
@door_staff_only
def tickets(request, scope_id):
    try:
        scope = _scope(scope_id)
    except BookingError as exc:
        return _problem(request, exc)
    return _json(
        {
            "scope": str(scope.id),
            "name": scope.name,
            "start": scope.start,
            "generatedOn": timezone.now(),
            "wholeBooking": scope.whole_booking,
            "tickets": checkin.door_list(scope),
        }
    )


@require_safe
@door_staff_only
def stats(request, scope_id):
    try:
        scope = _scope(scope_id)
    except BookingError as exc:
        return _problem(request, exc)
    return _json(
        {"counts": checkin.counts(scope), "conflicts": [conflict_data(c) for c in checkin.conflicts(scope, limit=20)]}
    )
