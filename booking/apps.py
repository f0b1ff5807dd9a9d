from django.apps import AppConfig
from django.utils.translation import gettext_lazy


class BookingConfig(AppConfig):
    name = "booking"
    verbose_name = gettext_lazy("Booking")

    def ready(self):
        from booking.web import ratelimits  # noqa: F401 - registers its system check (the rate settings)
