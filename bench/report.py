"""The run's results as one Markdown table (plus goals, floors, scenario, stadium), JSON and a
PNG chart of latency against concurrency."""

import json
import math
from pathlib import Path

ROWS = [
    ("hello", "Django hello world (the framework's floor)"),
    ("db_floor", "bare pymongo hold update (the database's floor)"),
    ("q1", "Q1 what's on"),
    ("q2", "Q2 seat map page"),
    ("naive", "Q2 naive: plain template loop over every cell"),
    ("q3", "Q3 live refresh, unchanged (304)"),
    ("q3_changed", "Q3 live refresh, changed (200)"),
    ("c1", "C1 hold seats (cart exists)"),
    ("c1_new_cart", "C1 hold seats (new cart)"),
    ("c2", "C2 release"),
    ("c3", "C3 checkout (the order waits for its payment)"),
    ("c3_pay", "C3 its card payment (/orders/<ref>/pay: seats sold)"),
    ("c3_stripe", "C3 of which localstripe: card token + the server's calls"),
    ("c3_box_office", "C3 checkout at the box office: a buyer with seats held (a confirmed reservation, no provider)"),
    ("c1_box_office_loop", "C1 hold seats (new cart), then at once"),
    ("c3_box_office_loop", "C3 its box-office checkout (hold and checkout in one loop)"),
    ("c4", "C4 expiry sweep, per stale cart"),
]


def _ms(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.2f}" if value < 100 else f"{value:.0f}"


def _cpu(st: dict) -> str:
    """The CPU columns of a timed row: web and MongoDB CPU ms per request, machine cores busy."""
    cpu = st.get("cpu") or {}
    cores = cpu.get("cores_busy")
    return (
        f"{_ms(cpu.get('web_ms_per_req'))} | {_ms(cpu.get('db_ms_per_req'))} "
        f"| {'–' if cores is None else f'{cores:.2f}'}"
    )


def _commands(acc: dict | None) -> str:
    if not acc:
        return "–"
    mark = ""
    if "meets_target" in acc:
        mark = " ✓" if acc["meets_target"] else " ✗"
    return f"{acc['commands']} ({acc['writes']} writes){mark}"


def markdown(r: dict) -> str:
    m = r["machine"]
    lines = [
        f"# Benchmark results ({r['size']} size{', some rows only' if r.get('only') else ''})",
        "",
        f"Run {r['started']} on {m['cpu']} ({m['cpus']} CPUs), {m['platform']}, Python {m['python']}, commit "
        f"{m.get('commit', '')}. MongoDB: {r['mongodb']}. gunicorn `{m['gunicorn']}`. Load average before "
        f"{', '.join(f'{x:.2f}' for x in m['load_before'])}, after "
        f"{', '.join(f'{x:.2f}' for x in m.get('load_after', ()))}. Client, server and MongoDB share the machine.",
        "",
        f"Every row at **{r['table_clients']} concurrent clients** (closed loop, keep-alive, "
        f"{r['table_clients']} threads over 2 client processes). Seat map: {r['seats_in_map']} seats. "
        "Latency is what the client saw; server p50 is the time inside Django (`X-Server-Time-Us`). "
        "Commands and bytes: pymongo command monitoring inside the gunicorn worker for one request "
        "(✓ = the access pattern's target), in a second gunicorn used for nothing else: the timed one runs "
        "without the monitor. Bytes exclude the 21-byte wire header each way. CPU over the measured "
        "seconds, per request timed: web = gunicorn's workers, db = the MongoDB stand-in (– for a real "
        "MongoDB); cores busy = the whole machine, client included. Rows timed together (C1 and C2; "
        "C1 new cart and C3; C1 and C3 box office in one loop) share one figure; "
        "Q3 changed includes the other buyer's hold or release, "
        "bare pymongo its untimed undo.",
        "",
        "| request | p50 ms | p99 ms | req/s | server p50 ms | web CPU ms/req | db CPU ms/req | cores busy "
        "| MongoDB commands | bytes to/from MongoDB | response bytes | failed |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |",
    ]
    acc = r["accounting"]
    for key, title in ROWS:
        if key == "c4":
            if "c4" not in r:  # a run of some rows only (--only)
                continue
            c4 = r["c4"]
            lines.append(
                f"| {title} | {_ms(c4['per_cart_ms'])} (mean) | – | {c4['carts'] / c4['seconds']:.0f} carts/s | – "
                f"| – | – | – | {c4['commands_per_cart']:.2f} ({c4['writes_per_cart']:.2f} writes) "
                f"{'✓' if c4['writes_per_cart'] == 2 else '✗'} | – | – | {len(c4['breaches'])} breaches |"
            )
            continue
        st = r["table"].get(key)
        a = acc.get(key)
        if st is None:
            continue
        traffic = f"{a['bytes_out']:,} / {a['bytes_in']:,}" if a else "–"
        size = f"{a['response_bytes']:,}" if a else "–"
        lines.append(
            f"| {title} | {_ms(st['p50'])} | {_ms(st['p99'])} | {st['rps']:.0f} | {_ms(st['server_p50'])} "
            f"| {_cpu(st)} | {_commands(a)} | {traffic} | {size} | {st['failed']} |"
        )
    lines += ["", "## Goals (ratios measured side by side in this run)", "", "| goal | measured | limit | met |"]
    lines.append("| --- | ---: | ---: | --- |")
    for g in r["goals"]:
        lines.append(
            f"| {g['goal']}<br><small>{g['detail']}</small> | {g['value']:.2f} | {g['limit']} "
            f"| {'yes' if g['met'] else '**no**'} |"
        )
    if r.get("only"):
        lines += ["", f"Only these rows were run (`--only {','.join(r['only'])}`), with hello world.", ""]
        lines += ["## Commands per request (in order)", ""]
        lines += [f"- {key}: {', '.join(a['list']) or 'none'}" for key, a in acc.items() if a]
        return "\n".join(lines) + "\n"
    rd = r["render"]
    lines += [
        "",
        "## The seat map render alone (CPU in one process, median of repeats)",
        "",
        f"naive template loop {rd['naive_ms']:.2f} ms; fast path cold build {rd['fast_cold_ms']:.2f} ms "
        f"({rd['naive_ms'] / rd['fast_cold_ms']:.0f}x less); reused for an unchanged version "
        f"{rd['fast_cached_ms']:.3f} ms ({rd['naive_ms'] / max(rd['fast_cached_ms'], 1e-6):.0f}x less).",
        "",
        "## Latency against concurrency",
        "",
        "![latency against concurrency](latency.png)",
        "",
        "| request | clients | p50 ms | p99 ms | req/s | web CPU ms/req | db CPU ms/req | cores busy |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, by_clients in r["sweep"].items():
        for clients, st in sorted(by_clients.items()):
            lines.append(f"| {name} | {clients} | {_ms(st['p50'])} | {_ms(st['p99'])} | {st['rps']:.0f} | {_cpu(st)} |")
    lines += ["", *scenario_table(r["scenario"])]
    st = r.get("stadium")
    if st:
        lines += [
            "",
            f"## Stadium ({st['seats']:,} seats in {st['documents']} section documents)",
            "",
            f"Largest session document {st['largest_doc_bytes'] / 1024:.0f} KB (limit 2 MB). Pages, 1 client:",
            "",
            "| page | p50 ms | HTML bytes | MongoDB commands |",
            "| --- | ---: | ---: | --- |",
        ]
        for name, page in st["pages"].items():
            lines.append(f"| {name} | {_ms(page['p50'])} | {page['bytes']:,} | {_commands(page.get('accounting'))} |")
        lines.append(f"| hello world | {_ms(st['hello_p50'])} | – | – |")
    lines += ["", "## Commands per request (in order)", ""]
    for key, a in acc.items():
        if a:
            lines.append(f"- {key}: {', '.join(a['list']) or 'none'}")
    return "\n".join(lines) + "\n"


def scenario_table(scenario: dict) -> list[str]:
    lines = [
        "## Seed scenario (service level: 4 processes of engine calls, users arrive 50/s per process)",
        "",
        "| variant | users | bought | honest conflicts | failed | retries | flow p50/p95/p99 ms "
        "| hold p50/p95/p99 ms | checkout + card payment p50/p95/p99 ms | invariants |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- | --- | --- | --- |",
    ]
    for name, sc in scenario.items():

        def three(d):
            return f"{_ms(d['p50'])} / {_ms(d['p95'])} / {_ms(d['p99'])}"

        lines.append(
            f"| {name} | {sc['users']} | {sc['ok']} | {sc['conflicts']} | {sc['failed']} | {sc['retries']} "
            f"| {three(sc['flow'])} | {three(sc['hold'])} | {three(sc['checkout'])} "
            f"| {'hold' if not sc['breaches'] else '; '.join(sc['breaches'][:3])} |"
        )
        if sc["failures"]:
            lines.append(f"| | failures: {'; '.join(sc['failures'])} | | | | | | | | |")
    return lines


def scenario_markdown(r: dict) -> str:
    """``python -m bench --scenario``: the machine and the seed scenario's table."""
    m = r["machine"]
    lines = [
        f"# Seed scenario alone ({r['size']} size)",
        "",
        f"Run {r['started']} on {m['cpu']} ({m['cpus']} CPUs), Python {m['python']}, commit {m.get('commit', '')}. "
        f"MongoDB: {r['mongodb']}. Load average before {', '.join(f'{x:.2f}' for x in m['load_before'])}, after "
        f"{', '.join(f'{x:.2f}' for x in m.get('load_after', ()))}. No web server: engine calls only.",
        "",
        *scenario_table(r["scenario"]),
    ]
    return "\n".join(lines) + "\n"


def chart(r: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for i, (name, by_clients) in enumerate(r["sweep"].items()):
        xs = sorted(by_clients, key=int)
        color = f"C{i}"
        left.plot(xs, [by_clients[x]["p50"] for x in xs], marker="o", color=color, label=f"{name} p50")
        left.plot(xs, [by_clients[x]["p99"] for x in xs], linestyle="--", color=color, alpha=0.5, label=f"{name} p99")
        right.plot(xs, [by_clients[x]["rps"] for x in xs], marker="o", color=color, label=name)
    left.set_xlabel("concurrent clients")
    left.set_ylabel("latency ms (log)")
    left.set_yscale("log")
    left.legend(fontsize=7, ncol=2)
    left.set_title("latency against concurrency")
    right.set_xlabel("concurrent clients")
    right.set_ylabel("requests/s (log)")
    right.set_yscale("log")
    right.set_title("throughput")
    right.legend(fontsize=7)
    fig.suptitle(f"{r['machine']['cpu']} x{r['machine']['cpus']}, {r['mongodb']}", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write(r: dict, out_dir: Path, with_chart: bool = True) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(json.dumps(r, indent=1, default=str))
    if with_chart and not r.get("only"):
        chart(r, out_dir / "latency.png")
    md = out_dir / "README.md"
    md.write_text(markdown(r) if "table" in r else scenario_markdown(r))
    return md
