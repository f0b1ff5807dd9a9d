from django.urls import include, path

from . import views

urlpatterns = [
    path("bench/hello", views.hello),
    path("bench/naive/<str:session_id>/", views.naive_map),
    path("", include("theater_site.urls")),
]
