"""Seats that came back on sale are offered to the performance's waiting list at once.

The services that give seats back (a hold ended or let go, an order canceled, an exchange's old
seats freed) call ``offer_to_waiting_list``; when a buyer waits for that performance, the worker is
asked to offer the seats (booking/sales/waiting_list.py ``offer_free_seats``). The offer itself
holds the seats in the conditional write that takes them off sale, so a buyer clicking a seat
between the release and the offer simply wins it. The worker's round every 30 s stays as the
safety net for a request lost on the way (broker down, process gone).

Kept apart from waiting_list.py: the modules that release seats are below it (it holds seats
through them), so they cannot import it.
"""

import logging

from bson import ObjectId

from booking.core import mongo, publish, work_queue

logger = logging.getLogger("booking.waiting_list")

WAITING = "waiting"  # an entry waiting for an offer (waiting_list.py's state of that name)


def offer_to_waiting_list(session_id: ObjectId, *, ever_listed: bool = True) -> bool:
    """Ask the worker to offer this performance's free seats when someone waits for them.
    True when asked (after this request's answer). ``ever_listed``: False when the session's
    ``waitingList`` flag, as the caller's own write answered it, says nobody ever joined: then the
    list is not asked (a seat click's release saves a round trip)."""
    if not ever_listed:
        return False
    if mongo.waiting_list().find_one({"sessionId": session_id, "state": WAITING}, {"_id": 1}) is None:
        return False
    publish.soon(_queue_offer, session_id)
    return True


def _queue_offer(session_id: ObjectId) -> None:
    try:
        work_queue.queue(work_queue.OFFER_RETURNED_SEATS, str(session_id))
    except Exception as exc:  # noqa: BLE001 - any broker failure: the worker's round offers them
        logger.warning("could not ask for waiting-list offers of session %s (%s); the round will", session_id, exc)
