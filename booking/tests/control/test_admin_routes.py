"""The staff admins' URL lists (control/base.py): every URL is answered by the class and method its
route names, made with the admin registered for the model (its permissions, URLs and log); a route
naming a function that is no Screens class's method is refused when the URLs are built."""

import re

import pytest
from django.contrib import admin
from django.urls import resolve, reverse

from booking.control.base import MongoModelAdmin, route
from booking.control.session_screens import session_label
from booking.models import Order, Session, Theater


@pytest.mark.parametrize("model", [Session, Theater, Order])
def test_each_url_is_answered_by_the_method_its_route_names_with_the_registered_admin(model):
    model_admin = admin.site.get_model_admin(model)
    assert isinstance(model_admin, MongoModelAdmin)
    answering: dict[type, object] = {}
    for pattern, view, name in model_admin.routes:
        kwargs = dict.fromkeys(re.findall(r"<\w+:(\w+)>", pattern), "1")
        url = reverse(f"admin:booking_{model._meta.model_name}_{name}", kwargs=kwargs)
        method = resolve(url).func.__wrapped__  # type: ignore[attr-defined]  # the admin site's wrapper off
        assert method.__func__ is view, url
        screens = method.__self__
        assert screens.admin is model_admin, url
        assert answering.setdefault(type(screens), screens) is screens, url  # one of each class


def test_a_route_naming_a_plain_function_is_refused():
    class Misrouted(MongoModelAdmin):
        routes = [route("<str:object_id>/label/", session_label, "label")]

    with pytest.raises(TypeError, match="session_label is not a method defined by a Screens class"):
        Misrouted(Session, admin.site).get_urls()
