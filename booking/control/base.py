"""What every MongoDB-backed ModelAdmin shares: its own URLs (under the names Django's admin
index and admin log expect), permission checks, rendering inside the admin's look, the admin log,
and the steps of a staff write: the document the URL names (``document``), the service's refusal
put on the form (``attempt``), then the log line, the message and the redirect (``saved``, or
``refused`` when the write did not happen)."""

from collections.abc import Callable
from typing import TYPE_CHECKING

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
    "attempt",
    "bound",
    "errors_text",
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


class MongoModelAdmin(admin.ModelAdmin):
    """A ModelAdmin whose data is not in the ORM: subclasses list their views in ``routes``."""

    routes: list = []  # (route, method name, url name suffix)

    def get_urls(self):
        info = self.opts.app_label, self.opts.model_name
        return [
            path(route, self.admin_site.admin_view(getattr(self, method)), name="{}_{}_{}".format(*info, suffix))
            for route, method, suffix in self.routes
        ]

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


# The view mixins of the admins (control/offers.py, control/payment_settings.py, ...) are mixed into
# MongoModelAdmin subclasses and call its helpers; for the type checker they are one.
if TYPE_CHECKING:
    AdminMixinBase = MongoModelAdmin
else:
    AdminMixinBase = object
