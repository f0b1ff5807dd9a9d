from django.urls import path

from . import views

app_name = "booking"

urlpatterns = [
    path("", views.whats_on, name="whats_on"),
]
