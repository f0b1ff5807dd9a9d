"""What every MongoDB-backed ModelAdmin shares: its own URLs (under the names Django's admin
index and admin log expect), permission checks, rendering inside the admin's look, and the
admin log."""

from typing import TYPE_CHECKING

from django.contrib import admin
from django.contrib.admin.models import ADDITION, CHANGE, DELETION, LogEntry
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.template.response import TemplateResponse
from django.urls import path, reverse

from booking.core.errors import NotFound
from booking.core.ids import object_id

__all__ = ["ADDITION", "CHANGE", "DELETION", "MongoModelAdmin", "bound"]


def bound(request):
    """Form data for a POST (even an empty one: a form posted empty must show its errors)."""
    return request.POST if request.method == "POST" else None


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

    def log(self, request, flag: int, document_id, label: str, message: str) -> None:
        """One line in Django's admin log, naming the MongoDB document by its id."""
        LogEntry.objects.log_actions(
            user_id=request.user.pk,
            queryset=[self.model.ref(document_id, label)],
            action_flag=flag,
            change_message=message,
        )

    # ModelAdmin's ORM-based machinery is never reached: every route above is ours.
    def get_queryset(self, request):
        return self.model.objects.none()


# The view mixins of the admins (control/offers.py, control/payment_settings.py, ...) are mixed into
# MongoModelAdmin subclasses and call its helpers; for the type checker they are one.
if TYPE_CHECKING:
    AdminMixinBase = MongoModelAdmin
else:
    AdminMixinBase = object
