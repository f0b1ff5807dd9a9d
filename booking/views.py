from django.shortcuts import render

from . import selectors


def whats_on(request):
    return render(request, "booking/whats_on.html", {"sessions": selectors.upcoming_sessions()})
