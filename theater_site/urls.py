from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", include("booking.health")),
    path("checkin/", include("booking.checkin_urls")),
    path("", include("booking.urls")),
]
