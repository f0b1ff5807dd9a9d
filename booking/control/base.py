"""What every MongoDB-backed ModelAdmin shares: its own URLs (under the names Django's admin
index and admin log expect), permission checks, rendering inside the admin's look, the admin log,
and the steps of a staff write: the document the URL names (``document``), the service's refusal
put on the form (``attempt``, or ``posted`` for a page whose form posts to itself), then the log
line, the message and the redirect (``saved``, or ``refused`` when the write did not happen).

An admin with many pages keeps them in ``Screens`` classes, one per group of pages, each made with
the admin whose permissions, URLs and log it uses; the admin's ``routes`` then say, URL by URL,
which class and method answers (``route``)."""

import sys
from collections.abc import Callable, Sequence
from functools import reduce
from typing import NamedTuple, NotRequired, TypedDict, Unpack

from bson import ObjectId
from django.contrib import admin, messages
from django.contrib.admin.models import ADDITION, CHANGE, DELETION, LogEntry
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.translation import gettext

from booking.control.forms import add_field_errors
from booking.core.errors import BookingError, InvalidRequest, NotFound
from booking.core.ids import object_id

__all__ = [
    "ADDITION",
    "CHANGE",
    "DELETION",
    "MongoModelAdmin",
    "OnePermissionAdmin",
    "Route",
    "Screens",
    "attempt",
    "bound",
    "errors_text",
    "route",
    "staff_name",
]


def bound(request):
    """Form data for a POST (even an empty one: a form posted empty must show its errors)."""
    return request.POST if request.method == "POST" else None


def staff_name(user) -> str:
    """Who did it, as kept on the order: the login name and the staff member's e-mail."""
    name = user.get_username()
    return f"{name} <{user.email}>" if user.email else name


def errors_text(form) -> str:
    """A form's errors in one line, for a message when the form itself is not shown again."""
    return " ".join(str(e) for errors in form.errors.values() for e in errors)


def attempt[T](form, write: Callable[[], T]) -> T | None:
    """A service's write for a valid form, or None with its refusal on the form (an InvalidRequest
    next to the fields it names, any other BookingError on top of the form)."""
    try:
        return write()
    except InvalidRequest as exc:
        add_field_errors(form, exc)
    except BookingError as exc:
        form.add_error(None, exc.message)
    return None


class Route(NamedTuple):
    """One URL of an admin: its path under the model's, the view, the URL name's suffix. The view
    is the name of the admin's own method, or a method of a ``Screens`` class
    (``PriceTableScreens.price_table``)."""

    pattern: str
    view: str | Callable
    name: str


def route(pattern: str, view: str | Callable, name: str) -> Route:
    return Route(pattern, view, name)


def screens_class(view: Callable) -> type:
    """The class that defines a method named as ``Class.method`` (its qualified name says which)."""
    owner = reduce(getattr, view.__qualname__.split(".")[:-1], sys.modules[view.__module__])
    if not (isinstance(owner, type) and issubclass(owner, Screens)) or vars(owner).get(view.__name__) is not view:
        raise TypeError(f"{view.__qualname__} is not a method defined by a Screens class")
    return owner


class MongoModelAdmin(admin.ModelAdmin):
    """A ModelAdmin whose data is not in the ORM: subclasses list their views in ``routes``."""

    routes: Sequence[tuple[str, str | Callable, str]] = ()  # Route, or (path, method name, URL name suffix)

    def __init__(self, model, admin_site):
        super().__init__(model, admin_site)
        self.screens: dict[type, Screens] = {}  # the Screens of its routes, one of each class

    def get_urls(self):
        info = self.opts.app_label, self.opts.model_name
        return [
            path(pattern, self.admin_site.admin_view(self.bound_view(view)), name="{}_{}_{}".format(*info, suffix))
            for pattern, view, suffix in self.routes
        ]

    def bound_view(self, view: str | Callable) -> Callable:
        """The view as a method of the object that answers: this admin, or its ``Screens`` of the
        view's class (one each, made with this admin)."""
        if isinstance(view, str):
            return getattr(self, view)
        owner = screens_class(view)
        if owner not in self.screens:
            self.screens[owner] = owner(self)
        return getattr(self.screens[owner], view.__name__)

    # --- permissions: Django's own, per model ---

    def require(self, request, action: str) -> None:
        checks = {
            "view": self.has_view_permission,
            "add": self.has_add_permission,
            "change": self.has_change_permission,
            "delete": self.has_delete_permission,
        }
        if not checks[action](request):
            raise PermissionDenied

    def can(self, request) -> dict:
        return {
            "view": self.has_view_permission(request),
            "add": self.has_add_permission(request),
            "change": self.has_change_permission(request),
            "delete": self.has_delete_permission(request),
        }

    # --- helpers for the views ---

    def url(self, suffix: str, *args) -> str:
        return reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_{suffix}", args=args)

    def document_id(self, raw: str):
        """A MongoDB id from the URL; anything else is a 404."""
        try:
            return object_id(raw, str(self.opts.verbose_name))
        except NotFound:
            raise Http404(f"No such {self.opts.verbose_name}.") from None

    def render(self, request, template: str, context: dict, status: int = 200) -> TemplateResponse:
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "app_label": self.opts.app_label,
            "perms_here": self.can(request),
            **context,
        }
        return TemplateResponse(request, template, context, status=status)

    def document[T](self, read: Callable[[ObjectId], T | None], raw_id: str, missing: str) -> T:
        """The document the URL names, read by ``read`` (an id to a document or None); a 404
        saying ``missing`` when there is none."""
        found = read(self.document_id(raw_id))
        if found is None:
            raise Http404(missing)
        return found

    def log(self, request, flag: int, document_id, label: str, message: str) -> None:
        """One line in Django's admin log, naming the MongoDB document by its id."""
        LogEntry.objects.log_actions(
            user_id=request.user.pk,
            queryset=[self.model.ref(document_id, label)],
            action_flag=flag,
            change_message=message,
        )

    def saved(
        self,
        request,
        flag: int,
        document_id,
        label: str,
        *,
        note: str,
        shown: str | None = None,
        to: str,
        level: Callable = messages.success,
    ) -> HttpResponseRedirect:
        """How a staff write ends: ``note`` in the admin log, the staff member told (``shown``, or
        the note itself) at ``level``, and on to the page ``to``."""
        self.log(request, flag, document_id, label, note)
        level(request, note if shown is None else shown)
        return HttpResponseRedirect(to)

    def refused(self, request, reason: str, to: str) -> HttpResponseRedirect:
        """A write refused where its form is not on the page: the reason as a message, on to ``to``."""
        messages.error(request, reason)
        return HttpResponseRedirect(to)

    def refused_page(self, request, reason: str, back: str, *, status: int = 400) -> TemplateResponse:
        """A posted form refused (bad input: 400; a conflict: 409): its message on a page of its
        own with the way back, and the status says so to a script or a test; nothing changed."""
        return self.render(
            request,
            "admin/booking/refused.html",
            {"title": gettext("Not saved"), "reason": reason, "back": back},
            status,
        )

    # ModelAdmin's ORM-based machinery is never reached: every route above is ours.
    def get_queryset(self, request):
        return self.model.objects.none()


class OnePermissionAdmin(MongoModelAdmin):
    """An admin seen with a permission of its own (``permission``) that adds, changes and deletes
    nothing."""

    permission = ""

    def has_view_permission(self, request, obj=None):
        return request.user.is_active and request.user.has_perm(self.permission)

    def has_module_permission(self, request):
        return self.has_view_permission(request)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class Saving(TypedDict):
    """How a write ends (MongoModelAdmin.saved): the log's note, what the staff member is told,
    where to, at which message level."""

    note: str
    shown: NotRequired[str | None]
    to: str
    level: NotRequired[Callable]


class Screens:
    """A group of staff pages under one admin, made with that admin: the pages ask it for the
    permission (``require``), read the document the URL names (``document``), render in the admin's
    look and end a write with its log line, message and redirect (``saved``)."""

    def __init__(self, admin: MongoModelAdmin):
        self.admin = admin

    def require(self, request, action: str) -> None:
        self.admin.require(request, action)

    def url(self, suffix: str, *args) -> str:
        return self.admin.url(suffix, *args)

    def document_id(self, raw: str):
        return self.admin.document_id(raw)

    def document[T](self, read: Callable[[ObjectId], T | None], raw_id: str, missing: str) -> T:
        return self.admin.document(read, raw_id, missing)

    def render(self, request, template: str, context: dict, status: int = 200) -> TemplateResponse:
        return self.admin.render(request, template, context, status)

    def log(self, request, flag: int, document_id, label: str, message: str) -> None:
        self.admin.log(request, flag, document_id, label, message)

    def saved(self, request, flag: int, document_id, label: str, **how: Unpack[Saving]) -> HttpResponseRedirect:
        return self.admin.saved(request, flag, document_id, label, **how)

    def refused(self, request, reason: str, to: str) -> HttpResponseRedirect:
        return self.admin.refused(request, reason, to)

    def refused_page(self, request, reason: str, back: str, *, status: int = 400) -> TemplateResponse:
        return self.admin.refused_page(request, reason, back, status=status)

    def posted[T](
        self, request, form, write: Callable[[], T], *, action: str = "change", conflict_field: str | None = None
    ) -> tuple[T | None, int]:
        """A page whose form posts to itself: nothing on a GET (status 200); on a POST the
        permission ``action``, then the write for a valid form, with its refusal on the form (an
        InvalidRequest next to its fields, status 400; any other BookingError, a conflict, with 409
        on top or next to ``conflict_field``). The write's result, or None and the page's status."""
        if request.method != "POST":
            return None, 200
        self.require(request, action)
        if not form.is_valid():
            return None, 400
        try:
            return write(), 200
        except InvalidRequest as exc:
            add_field_errors(form, exc)
            return None, 400
        except BookingError as exc:
            form.add_error(conflict_field, exc.message)
            return None, 409
