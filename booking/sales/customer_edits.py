"""Staff correct the customer's name and e-mail on an order.

One conditional update that names the name and e-mail the staff member saw: a second edit in
between is refused (``Conflict``), never overwritten. The same update keeps the old and the new
values with who and when in the order's ``customerEdits`` (its history) and refreshes ``nameKeys``
(the staff search by name). Sending the confirmation to the new address is the caller's choice
(notifications.confirmations.resend).
"""

from bson import ObjectId
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.utils.translation import gettext
from pymongo import ReturnDocument

from booking.core import clock, mongo
from booking.core.domain import CustomerEdit, Order
from booking.core.errors import Conflict, InvalidRequest, NotFound
from booking.core.names import name_keys

NAME_MAX = 200
EMAIL_MAX = 254


def clean_customer(*, name: str, email: str) -> tuple[str, str]:
    """The name with its spaces collapsed and the e-mail in lower case, or InvalidRequest."""
    name = " ".join((name or "").split())
    email = (email or "").strip().lower()
    errors: dict[str, str] = {}
    if not name:
        errors["name"] = gettext("Please enter the customer's name.")
    elif len(name) > NAME_MAX:
        errors["name"] = gettext("The name is at most %(max)d characters.") % {"max": NAME_MAX}
    if email:
        try:
            if len(email) > EMAIL_MAX:
                raise ValidationError("too long")
            validate_email(email)
        except ValidationError:
            errors["email"] = gettext("Please enter a valid e-mail address.")
    if errors:
        raise InvalidRequest(" ".join(errors.values()), fields=errors)
    return name, email


def change_customer(
    order_id: ObjectId, *, name: str, email: str, seen_name: str, seen_email: str, by: str
) -> tuple[Order, bool]:
    """(the order as stored now, whether it changed). Unchanged values write nothing."""
    name, email = clean_customer(name=name, email=email)
    order = mongo.orders().find_one({"_id": order_id}, {"ref": 1, "name": 1, "email": 1})
    if order is None:
        raise NotFound(gettext("No such order."))
    if (order.get("name", ""), order.get("email", "")) != (seen_name, seen_email):
        raise Conflict(gettext("The customer's details changed since this page was shown; please look again."))
    if (name, email) == (seen_name, seen_email):
        return mongo.orders().find_one({"_id": order_id}) or order, False
    edit: CustomerEdit = {
        "at": clock.now(),
        "by": by,
        "old": {"name": seen_name, "email": seen_email},
        "new": {"name": name, "email": email},
    }
    changed = mongo.orders().find_one_and_update(
        {"_id": order_id, "ref": order["ref"], "name": seen_name, "email": seen_email},
        {"$set": {"name": name, "email": email, "nameKeys": name_keys(name)}, "$push": {"customerEdits": edit}},
        return_document=ReturnDocument.AFTER,
    )
    if changed is None:  # another edit came between the read and this write
        raise Conflict(gettext("The customer's details changed since this page was shown; please look again."))
    return changed, True
