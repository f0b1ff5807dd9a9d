"""Big venues: a 100,000-seat stadium, one session document per section. Measures the largest
document, and each page the buyer sees (what's on, the section overview, one section's map, its
live refresh) against hello world, one client at a time. The accounting request of each page goes
to the gunicorn with the command monitor, the timed ones to the one without (bench/stack.py)."""

import bson

from booking.core import mongo
from booking.sales.demo_stadium import create_match, create_stadium

from . import flows, load
from .load import Client


def measure_stadium(stack, seats: int, seconds: float = 2.0, warmup: float = 1.0) -> dict:
    stadium = create_stadium(seats=seats)
    first = create_match(stadium)
    performance_id = first["performanceId"]
    sizes = [len(bson.encode(doc)) for doc in mongo.sessions().find({"performanceId": performance_id})]
    biggest = max(mongo.sessions().find({"performanceId": performance_id}), key=lambda d: d["seatsTotal"])
    pages = {
        "what's on": "/",
        "section overview": f"/performances/{performance_id}/",
        "one section's seat map": f"/sessions/{biggest['_id']}/",
        "section live map (200)": f"/sessions/{biggest['_id']}/map/",
    }
    out: dict = {
        "seats": stadium["seatCount"],
        "documents": len(sizes),
        "largest_doc_bytes": max(sizes),
        "theater_doc_bytes": len(bson.encode(mongo.theaters().find_one({"_id": stadium["_id"]}))),
        "pages": {},
    }
    probe = Client(stack.accounting_url, 61_000)
    for label, path in pages.items():
        answer = probe.get(path, {"X-Bench-Account": "1"})
        if answer.status != 200:
            raise RuntimeError(f"stadium page {path} answered {answer.status}")
        from .run import account

        result = load.run(flows.get_page, stack.base_url, 1, seconds, {"path": path, "label": label}, warmup=warmup)
        samples = result.samples[label]
        out["pages"][label] = {
            "p50": load.percentile([s.seconds * 1000 for s in samples], 50),
            "bytes": len(answer.body),
            "accounting": account(answer),
        }
    hello = load.run(flows.hello, stack.base_url, 1, seconds, {}, warmup=warmup)
    out["largest_page_bytes"] = max(page["bytes"] for page in out["pages"].values())
    out["hello_p50"] = load.percentile([s.seconds * 1000 for s in hello.samples["hello"]], 50)
    probe.close()
    return out
