"""Reports: a performance's sales (``reports.figures.build``, the staff report's figures)."""

from dataclasses import asdict

from django.utils.translation import gettext
from ninja import Router

from booking.api import schemas
from booking.api.auth import needs, token_of
from booking.api.common import NotFoundHere, path_id
from booking.core import mongo
from booking.reports import figures
from booking.web.api_tokens import READ_REPORTS

router = Router(tags=["reports"])


def figures_out(row: figures.Figures) -> dict:
    data = asdict(row)
    data.pop("by_rate", None)
    return data


@router.get(
    "/reports/performances/{performance_id}/sales/",
    response=schemas.SalesReportOut,
    **needs(READ_REPORTS),
    summary="Sales of a performance",
)
def performance_sales(request, performance_id: str):
    """Tickets and money (gross, net, VAT) in total, per category, ticket type and channel, the
    refunds, and the seats (sold, held, blocked, free). ``as_of``: the count the figures rest on
    (the worker recounts a performance shortly after its orders change)."""
    token = token_of(request)
    missing = gettext("No such performance.")
    session_id = path_id(performance_id, missing)
    if mongo.sessions().find_one({"_id": session_id, "theaterId": token["theaterId"]}, {"_id": 1}) is None:
        raise NotFoundHere(missing)
    report = figures.build("session", session_id)
    return {
        "performance_id": str(session_id),
        "title": report.title,
        "theater": report.theater,
        "currency": report.currency,
        "seats": report.seats,
        "totals": figures_out(report.totals),
        "by_category": [figures_out(f) for f in report.by_category],
        "by_ticket_type": [figures_out(f) for f in report.by_type],
        "by_channel": [figures_out(f) for f in report.by_channel],
        "refunds": figures_out(report.refunds),
        "as_of": report.as_of,
    }
