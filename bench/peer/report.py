"""The peer run's table (with the ratio per row), goals, JSON and chart."""

import json
import math
from pathlib import Path

# (key in results, label in the row, count label whose CPU figures the row shows, what a request is)
ROWS = [
    ("whats_on", "whats_on", "what's on (ours: /; pretix: the organizer's event list)"),
    ("seat_map", "seat_map", "seat map page (ours: the 830-seat map; pretix: the event page, no map in core)"),
    ("hold_release_10", "hold", "hold 2 seats, 10 clients"),
    ("hold_release_10", "release", "release them, 10 clients"),
    ("hold_release_50", "hold", "hold 2 seats, 50 clients"),
    ("hold_release_50", "release", "release them, 50 clients"),
    ("checkout", "hold (new cart)", "checkout's hold (new cart), 10 clients"),
    ("checkout", "checkout request", "one checkout request, 10 clients"),
    ("checkout", "checkout", "checkout: all its requests to the order page, 10 clients (per order)"),
]


def _quiet_or_not(r: dict) -> str:
    """What the one-minute load before the run says about the figures (later loads are mostly the
    run's own: our half leaves about 5 on two cores)."""
    if r["load_before"][0] < 2.5:
        return "The machine was quiet before the run; the later loads are mostly the run's own."
    return "Two cores shared with other work: noisy figures."


def _f(v, digits=1) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:,.{digits}f}"


def _ratio(a, b, higher_better: bool) -> str:
    if not a or not b:
        return "–"
    return f"{(a / b if higher_better else b / a):.1f}x"


def _cpu(row: dict) -> dict:
    return next((v for k, v in row.items() if k.startswith("cpu_per_")), {})


def goals(r: dict) -> list[dict]:
    o, p = r["ours"], r["pretix"]
    out = []

    def goal(name, value, limit, met, detail):
        out.append({"goal": name, "value": value, "limit": limit, "met": bool(met), "detail": detail})

    def both(key, label):
        return o[key].get(label, {}), p[key].get(label, {})

    oh, ph = both("hold_release_50", "hold")
    orl, prl = both("hold_release_50", "release")
    ours_rps, peer_rps = oh.get("rps", 0) + orl.get("rps", 0), ph.get("rps", 0) + prl.get("rps", 0)
    ratio = ours_rps / peer_rps if peer_rps else float("inf")
    goal(
        "hold and release at 50 clients: >= 3x pretix's throughput",
        ratio,
        3,
        ratio >= 3,
        f"ours {ours_rps:.0f} req/s vs pretix {peer_rps:.0f} req/s (holds + releases)",
    )
    p99 = max(oh.get("p99", 0), orl.get("p99", 0)) / max(ph.get("p99", 0), prl.get("p99", 0), 1e-9)
    goal(
        "hold and release at 50 clients: p99 <= 1/3 of pretix's",
        p99,
        0.333,
        p99 <= 1 / 3,
        f"ours hold {oh.get('p99', 0):.0f} / release {orl.get('p99', 0):.0f} ms vs pretix hold "
        f"{ph.get('p99', 0):.0f} / clear {prl.get('p99', 0):.0f} ms",
    )
    oc, pc = both("checkout", "checkout")
    ratio = oc.get("rps", 0) / pc["rps"] if pc.get("rps") else float("inf")
    goal(
        "checkout to a confirmed order: >= 3x pretix's throughput",
        ratio,
        3,
        ratio >= 3,
        f"ours {oc.get('rps', 0):.1f} orders/s vs pretix {pc.get('rps', 0):.1f} orders/s (10 clients, hold included)",
    )
    orush, prush = o["rush"], p["rush"]
    if orush.get("sold_out_seconds") and prush.get("sold_out_seconds"):
        ratio = orush["sold_out_seconds"] / prush["sold_out_seconds"]
    else:
        ratio = float("nan")
    twice = orush["check"]["sold_twice"] + prush["check"]["sold_twice"]
    goal(
        "the rush: sold out in <= half pretix's time, 0 seats sold twice on both",
        ratio,
        0.5,
        ratio <= 0.5 and twice == 0 and orush["seats_sold"] == 40 and prush["seats_sold"] == 40,
        f"ours {_f(orush.get('sold_out_seconds'), 2)} s vs pretix {_f(prush.get('sold_out_seconds'), 2)} s; "
        f"seats sold {orush['seats_sold']} / {prush['seats_sold']}; sold twice {orush['check']['sold_twice']} / "
        f"{prush['check']['sold_twice']}",
    )
    return out


def markdown(r: dict) -> str:
    o, p = r["ours"], r["pretix"]
    lines = [
        "# Peer run: ours against pretix, side by side",
        "",
        f"Run {r['started']}, commit {r.get('commit', '')}, pretix {r.get('pretix_version', '')}. Both behind "
        f"gunicorn `{r['gunicorn']}`; {r['seconds']:.0f} s per row after an unmeasured warm-up; ours first, "
        f"then pretix. Load average before {', '.join(_f(x, 2) for x in r['load_before'])}; at each system's "
        f"start {'; '.join(f'{n} ' + ', '.join(_f(x, 2) for x in la) for n, la in r['load_during'])}; after "
        f"{', '.join(_f(x, 2) for x in r['load_after'])}. {_quiet_or_not(r)}",
        "",
        "Latency is what the client saw (ms). CPU: ms per counted request (per order for the checkout rows) "
        "of the web workers, the database (ours: devmongo; pretix: its PostgreSQL backends) and Redis. "
        "Ratio: ours over pretix's throughput, pretix's over our p99 (higher is better for us).",
        "",
        "| request | ours p50 | ours p99 | ours req/s | ours err | pretix p50 | pretix p99 | pretix req/s | pretix err "
        "| ratio req/s | ratio p99 | ours CPU web/db/redis | pretix CPU web/db/redis |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for key, label, title in ROWS:
        a, b = o[key].get(label), p[key].get(label)
        if not a or not b:
            continue
        ca, cb = _cpu(a), _cpu(b)
        lines.append(
            f"| {title} | {_f(a['p50'])} | {_f(a['p99'])} | {_f(a['rps'])} | {a['errors']} | {_f(b['p50'])} "
            f"| {_f(b['p99'])} | {_f(b['rps'])} | {b['errors']} | {_ratio(a['rps'], b['rps'], True)} "
            f"| {_ratio(a['p99'], b['p99'], False)} "
            f"| {_f(ca.get('web_ms'))} / {_f(ca.get('db_ms'))} / {_f(ca.get('redis_ms'), 2)} "
            f"| {_f(cb.get('web_ms'))} / {_f(cb.get('db_ms'))} / {_f(cb.get('redis_ms'), 2)} |"
        )
    lines += [
        "",
        "## The rush: 200 buyers, 40 seats, 2 side by side each",
        "",
        "| | ours | pretix | ratio |",
        "| --- | ---: | ---: | ---: |",
    ]
    orush, prush = o["rush"], p["rush"]
    for title, fn, digits in (
        ("orders (2 seats each)", lambda x: x["orders"], 0),
        ("time to sell out, s", lambda x: x.get("sold_out_seconds"), 2),
        ("every buyer done (the last ones see it sold out), s", lambda x: x["all_done_seconds"], 2),
        ("seats sold twice (database query afterwards)", lambda x: x["check"]["sold_twice"], 0),
        ("seats in orders (database)", lambda x: x["check"]["seats_in_orders"], 0),
        ("hold attempts", lambda x: x.get("rush hold", {}).get("n"), 0),
        ("hold p50 ms", lambda x: x.get("rush hold", {}).get("p50"), 1),
        ("hold p99 ms", lambda x: x.get("rush hold", {}).get("p99"), 1),
        ("checkout request p99 ms", lambda x: x.get("rush checkout request", {}).get("p99"), 1),
        ("errors (failed checkouts, client errors)", lambda x: x["failed_checkouts"] + len(x["client_errors"]), 0),
        ("web CPU ms/request", lambda x: x["cpu_per_request"].get("web_ms"), 2),
        ("db CPU ms/request", lambda x: x["cpu_per_request"].get("db_ms"), 2),
        ("redis CPU ms/request", lambda x: x["cpu_per_request"].get("redis_ms"), 3),
    ):
        a, b = fn(orush), fn(prush)
        ratio = f"{b / a:.1f}x" if title.startswith("time") and a and b else ""
        lines.append(f"| {title} | {_f(a, digits)} | {_f(b, digits)} | {ratio} |")
    lines += ["", "## Goals", "", "| goal | measured | limit | met |", "| --- | ---: | ---: | --- |"]
    for g in r["goals"]:
        lines.append(
            f"| {g['goal']}<br><small>{g['detail']}</small> | {_f(g['value'], 2)} | {g['limit']} "
            f"| {'yes' if g['met'] else '**no**'} |"
        )
    lines += ["", "![ours and pretix](peer.png)", ""]
    return "\n".join(lines) + "\n"


def chart(r: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels, ours_rps, peer_rps, ours_p99, peer_p99 = [], [], [], [], []
    for key, label, title in ROWS:
        a, b = r["ours"][key].get(label), r["pretix"][key].get(label)
        if a and b:
            labels.append(title.split(" (")[0].replace(", ", "\n"))
            ours_rps.append(a["rps"])
            peer_rps.append(b["rps"])
            ours_p99.append(a["p99"])
            peer_p99.append(b["p99"])
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5))
    xs = range(len(labels))
    for ax, ours, peer, title in (
        (left, ours_rps, peer_rps, "throughput, req/s (log)"),
        (right, ours_p99, peer_p99, "p99 latency, ms (log)"),
    ):
        ax.bar([x - 0.2 for x in xs], ours, 0.4, label="ours")
        ax.bar([x + 0.2 for x in xs], peer, 0.4, label="pretix")
        ax.set_xticks(list(xs))
        ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=7)
        ax.set_yscale("log")
        ax.set_title(title)
        ax.legend()
    fig.suptitle("ours vs pretix, same machine, same run", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write(r: dict, out: Path, with_chart: bool = True) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    r["goals"] = goals(r)
    (out / "peer.json").write_text(json.dumps(r, indent=1, default=str))
    if with_chart:
        chart(r, out / "peer.png")
    md = out / "peer.md"
    md.write_text(markdown(r))
    return md
