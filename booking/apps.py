from django.apps import AppConfig


class BookingConfig(AppConfig):
    name = "booking"
    verbose_name = "Booking"

    def ready(self):
        from booking.web import ratelimits  # noqa: F401 - registers its system check (the rate settings)
