from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.decorators.cache import cache_control
from django.views.generic import RedirectView
from django.views.i18n import JavaScriptCatalog


class FaviconRedirect(RedirectView):
    permanent = True

    def get_redirect_url(self, *args, **kwargs):
        return static("booking/favicon.svg")  # at request time: the collected (hashed) name in production


urlpatterns = [
    path("admin/", admin.site.urls),
    # The header's language switch posts to Django's set_language (i18n/setlang/), which keeps the
    # choice in the django_language cookie; the JavaScript catalog gives site scripts their strings.
    path("i18n/", include("django.conf.urls.i18n")),
    # Pages ask for it as /i18n/js/?lang=<code>: one URL per language, so browsers may keep it a day.
    path("i18n/js/", cache_control(max_age=86400)(JavaScriptCatalog.as_view()), name="javascript-catalog"),
    # Browsers ask for /favicon.ico whatever the page links: send them to the static icon.
    path("favicon.ico", FaviconRedirect.as_view()),
    path("healthz", include("booking.web.health")),
    path("checkin/", include("booking.checkin.urls")),
    path("api/v1/", include("booking.api.urls")),  # the REST API (docs/api.md)
    path("", include("booking.presale.urls")),
]
