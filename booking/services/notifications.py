"""Telling the buyer: the confirmation e-mail after checkout.

The order is stored with ``mail: "pending"`` before this runs. Queuing the e-mail needs Redis;
if Redis is down the checkout still succeeds and reconcile queues the mail again later.
"""

import logging

from bson import ObjectId

logger = logging.getLogger("booking.notifications")


def order_confirmed(order_id: ObjectId) -> bool:
    """Queue the confirmation e-mail. Returns False (and logs) when the broker is unreachable."""
    from ..tasks import send_order_confirmation

    try:
        send_order_confirmation.apply_async(args=[str(order_id)], retry=False)
    except Exception as exc:  # noqa: BLE001 - any broker failure: the mail is re-queued by reconcile
        logger.warning("could not queue confirmation mail for order %s (%s); reconcile will retry", order_id, exc)
        return False
    return True
