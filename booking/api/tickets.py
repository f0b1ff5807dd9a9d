"""Tickets: check-in from a third-party scanner, through the door's own service
(``sales.checkin.check_in``): one conditional update per ticket, so two scanners racing for one
ticket let it in once, and the second hears where and when it was used. A ``scan_id`` (or an
``Idempotency-Key``) makes a retried scan answer "admitted" again instead of "already used"."""

from django.utils.translation import gettext
from ninja import Router

from booking.api import schemas
from booking.api.auth import needs, token_of
from booking.api.common import NotFoundHere, idempotent
from booking.core import faults, mongo
from booking.core.ids import object_id
from booking.sales import checkin
from booking.web.api_tokens import CHECK_IN

router = Router(tags=["tickets"])


def outcome_out(outcome: checkin.Outcome) -> dict:
    ticket = outcome.ticket or {}
    used = outcome.used or {}
    seat = None
    if ticket:
        seat = gettext("Row %(row)s · Seat %(seat)s") % {"row": ticket.get("row"), "seat": ticket.get("seat")}
        seat = f"{ticket['section']} · {seat}" if ticket.get("section") else seat
    return {
        "status": outcome.status,
        "admitted": outcome.admitted,
        "message": gettext(outcome.message) if outcome.message else "",
        "seat": seat,
        "used_at": used.get("at"),
        "used_door": used.get("door"),
        "replay": outcome.replay,
    }


@router.post(
    "/tickets/check-in/",
    response={200: schemas.CheckInOut, 400: schemas.Error},
    **needs(CHECK_IN),
    summary="Check a ticket in",
)
def check_in(request, body: schemas.CheckInIn):
    """Let the ticket's holder in to the performance (a session, or a sectioned venue's whole
    performance), once. ``admitted`` says whether to open the gate; ``status`` why not."""
    token = token_of(request)
    scope_id = object_id(body.performance_id)
    mine = {"$or": [{"_id": scope_id}, {"performanceId": scope_id}], "theaterId": token["theaterId"]}
    if mongo.sessions().find_one(mine, {"_id": 1}) is None:
        raise NotFoundHere(gettext("No such performance."))

    def run() -> tuple[int, dict]:
        scope = checkin.get_scope(scope_id)
        faults.point("api.checkin.before")
        outcome = checkin.check_in(
            scope, door=body.door, by=f"API token {token['name']}", code=body.code, scan_id=body.scan_id
        )
        return 200, schemas.CheckInOut.model_validate(outcome_out(outcome)).model_dump(mode="json")

    return idempotent(request, run)
