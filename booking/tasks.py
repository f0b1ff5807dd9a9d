"""Celery tasks: thin wrappers around the engine's services. Arguments are ids, never documents."""

from celery import shared_task


@shared_task(name="booking.tasks.send_order_confirmation")
def send_order_confirmation(order_id: str) -> None:
    raise NotImplementedError("the confirmation e-mail is built in the worker issue")
