"""The door check-in's URLs (``/checkin/``); the endpoint list is in booking/checkin/views.py."""

from django.urls import path

from booking.checkin import views

app_name = "checkin"

urlpatterns = [
    path("", views.index, name="index"),
    path("login/", views.DoorLoginView.as_view(), name="login"),
    path("logout/", views.DoorLogoutView.as_view(), name="logout"),
    path("sw.js", views.service_worker, name="sw"),
    path("<str:scope_id>/", views.door_page, name="door"),
    path("<str:scope_id>/scan", views.scan, name="scan"),
    path("<str:scope_id>/undo", views.undo, name="undo"),
    path("<str:scope_id>/search", views.search, name="search"),
    path("<str:scope_id>/tickets.json", views.tickets, name="tickets"),
    path("<str:scope_id>/sync", views.sync, name="sync"),
    path("<str:scope_id>/stats", views.stats, name="stats"),
    path("<str:scope_id>/conflicts/<str:conflict_id>/seen", views.seen, name="seen"),
]
