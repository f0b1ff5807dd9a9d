"""The benchmark at CI size: it runs from one command and every request costs the MongoDB commands
docs/architecture.md promises. No timing assertions: this machine's timings are not the product's."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_small_benchmark_runs_and_command_counts_match_the_design_guide(tmp_path):
    """Also: every timed row carries its CPU figures (values not checked: they are timings)."""
    env = dict(os.environ)  # the test MongoDB and Redis (conftest); the run uses a database of its own
    env.pop("DJANGO_SETTINGS_MODULE", None)
    run = subprocess.run(
        [sys.executable, "-m", "bench", "--small", "--no-chart", "--out", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    results = json.loads((tmp_path / "results.json").read_text())

    accounting = results["accounting"]
    checked = {name: a for name, a in accounting.items() if a and "meets_target" in a}
    # c3_pay: since payments checkout's seats are sold by its card payment, which is checked too
    # c3_box_office: our own checkout to a confirmed reservation, no provider (checkout row)
    assert set(checked) == {
        *("q1", "q2", "q3", "c1", "c1_new_cart", "c1_first_in_worker", "c2", "c3", "c3_pay", "c3_box_office")
    }
    assert {"c3", "c3_pay", "c3_stripe"} <= set(results["table"])  # localstripe's share in a row of its own
    # buyers with seats held check out (the goal's row), and hold-then-checkout in one loop
    assert {"c3_box_office", "c1_box_office_loop", "c3_box_office_loop"} <= set(results["table"])
    assert "c1_box_office" not in results["table"]  # the goal row's holds are made before its window
    # the theater's VAT settings are read by a worker's first checkout of the theater only
    # (BOOKING_VAT_CACHE_SECONDS); the accounting's box-office checkout may be served by either worker
    box_office = accounting["c3_box_office"]["list"]
    assert box_office.count("find theaters") <= 1
    # ... and whether any webhook endpoint is on, by a worker's first sale (then every 5 s)
    assert box_office.count("find webhook_endpoints") <= 1
    assert [c for c in box_office if c not in ("find theaters", "find webhook_endpoints")] == [
        *("find carts", "find sessions", "findAndModify client_holds", "update carts", "insert orders")
    ]
    goals = {g["goal"].split(":")[0] for g in results["goals"]}
    assert {"what's on", "checkout to a confirmed order (box office) at 2 clients"} <= goals
    assert "selling a subscription of 8 performances" in goals
    assert {name: a["list"] for name, a in checked.items() if not a["meets_target"]} == {}
    assert accounting["q3"]["status"] == 304
    # a hold reads only carts once its worker knows the session; the first one there reads it too.
    # In a cart the read is the write that takes the seats its releases left counted for its address.
    for hold, read in (("c1", "findAndModify carts"), ("c1_new_cart", "find carts")):
        assert accounting[hold]["list"][0] == read and "find sessions" not in accounting[hold]["list"]
    assert "client_holds" not in " ".join(accounting["c2"]["list"])  # a release leaves the address's count
    assert "find sessions" in accounting["c1_first_in_worker"]["list"]
    assert accounting["db_floor"]["list"] == ["update sessions"]
    assert results["c4"]["writes_per_cart"] == 2 and results["c4"]["breaches"] == []

    assert all(row["failed"] == 0 for row in results["table"].values()), results["table"]
    timed_rows = [
        *results["table"].values(),
        *(row for by_clients in results["sweep"].values() for row in by_clients.values()),
    ]
    bench_started_mongodb = results["mongodb"].startswith("devmongo")  # a real MongoDB is no process of ours
    for row in timed_rows:
        cpu = row["cpu"]
        assert cpu["requests"] > 0 and cpu["seconds"] > 0, cpu
        for name in ("web_ms_per_req", "cores_busy", *(["db_ms_per_req"] if bench_started_mongodb else [])):
            assert isinstance(cpu[name], int | float) and cpu[name] >= 0, (name, cpu)
        if not bench_started_mongodb:
            assert cpu["db_ms_per_req"] is None, cpu
    for variant in ("disjoint", "overlap"):
        scenario = results["scenario"][variant]
        assert scenario["failed"] == 0, scenario["failures"]
        assert scenario["breaches"] == []
        assert scenario["ok"] + scenario["conflicts"] == scenario["users"]

    stadium = results["stadium"]
    assert stadium["largest_doc_bytes"] < 2 * 1024 * 1024
    # the performance by _id, then its sections by _id (shard-targeted: venues/performance_index.py)
    assert stadium["pages"]["section overview"]["accounting"]["list"] == ["find performances", "find sessions"]
    markdown = (tmp_path / "README.md").read_text()
    assert markdown.startswith("# Benchmark results")
    assert "| web CPU ms/req | db CPU ms/req | cores busy |" in markdown


@pytest.mark.slow
def test_only_some_rows(tmp_path):
    """``--only``: the accounting pass, hello world and the rows asked for, nothing else."""
    env = dict(os.environ)
    env.pop("DJANGO_SETTINGS_MODULE", None)
    run = subprocess.run(
        [sys.executable, "-m", "bench", "--small", "--only", "whats_on", "--out", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    results = json.loads((tmp_path / "results.json").read_text())
    assert set(results["table"]) == {"hello", "q1"}
    assert "sweep" not in results and "scenario" not in results
    assert [g["goal"].split(":")[0] for g in results["goals"]] == ["what's on"]
    assert "Q1 what's on" in (tmp_path / "README.md").read_text()


@pytest.mark.slow
def test_the_api_benchmark_runs_and_availability_costs_its_three_commands_once_the_layout_is_kept():
    env = dict(os.environ)
    env.pop("DJANGO_SETTINGS_MODULE", None)
    run = subprocess.run(
        [sys.executable, "-m", "bench.api", "--scale", "0.004", "--samples", "3"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    rows = {
        cells[0]: cells[1:]
        for line in run.stdout.splitlines()
        if line.startswith("| ") and not line.startswith("| call")
        for cells in [[cell.strip() for cell in line.strip("|").split("|")]]
    }
    commands = {call: int(cells[4]) for call, cells in rows.items() if cells[4].isdigit()}
    assert commands["availability of one performance"] == 3  # token, session, call log
    assert commands["availability, a performance's first call in this process"] == 4  # and the layout once
    assert len(commands) == 9
