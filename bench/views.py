"""Benchmark-only views: the framework's floor and the naive seat map a first version would write."""

from bson import ObjectId
from bson.errors import InvalidId
from django.http import Http404, HttpResponse
from django.shortcuts import render

from booking.core.formatting import format_money
from booking.sales import selectors


def hello(request):
    return HttpResponse("Hello, world", content_type="text/plain")


def naive_context(session: dict) -> dict:
    """Every cell as a dict for the template, the way a first version shapes the data."""
    categories = {c["code"]: c for c in session["layout"]["categories"]}
    rows = []
    for r, (row, states) in enumerate(zip(session["layout"]["rows"], session["seats"], strict=True)):
        cells = []
        for c, (cell, state) in enumerate(zip(row["cells"], states, strict=True)):
            if cell is None:
                cells.append({"gap": True})
                continue
            category = categories[cell["cat"]]
            cells.append(
                {
                    "key": f"{r}:{c}",
                    "id": f"s{r}-{c}",
                    "label": cell["label"],
                    "category": category,
                    "price": format_money(session["prices"].get(cell["cat"]), session.get("currency")),
                    "state": state,
                    "wheelchair": cell.get("wheelchair", False),
                    "companion": cell.get("companion", False),
                }
            )
        rows.append({"label": row["label"], "cells": cells})
    return {"session": session, "rows": rows}


def naive_map(request, session_id):
    try:
        session = selectors.get_session(ObjectId(session_id))
    except InvalidId:
        raise Http404("No such performance.") from None
    if session is None:
        raise Http404("No such performance.")
    return render(request, "bench/naive_map.html", naive_context(session))
