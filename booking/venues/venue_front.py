"""What the seats of a venue face, named on its seat maps: a theater's stage, a stadium's pitch.

The venue decides (``theaters.front``, copied into each session as ``front``); absent means a
stage, as every hall before this field had."""

from collections.abc import Mapping
from typing import Any

from django.utils.translation import gettext_lazy as _

from booking.core.errors import InvalidRequest

FRONTS = {
    "stage": _("Stage"),
    "pitch": _("Pitch"),
    "field": _("Field"),
    "screen": _("Screen"),
}
DEFAULT = "stage"


def clean_front(front: str | None) -> str:
    """One of FRONTS (None: the default); anything else is refused with a message."""
    if front in (None, ""):
        return DEFAULT
    if front not in FRONTS:
        raise InvalidRequest(str(_("The front of a venue is one of: stage, pitch, field, screen.")))
    return front


def front_word(doc: Mapping[str, Any] | None) -> str:  # a Theater or a Session
    """The word for a session's or theater's front, translated."""
    return str(FRONTS.get((doc or {}).get("front") or DEFAULT, FRONTS[DEFAULT]))
