"""The on-sale simulation at smoke size (300 buyers, the pushed waiting room): it runs from one
command and what it checks holds: no 5xx, nothing sold twice, admitted in queue order, early
before late, the buyers waited on the event stream. No timing assertions: this machine's timings
are not the product's."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.parametrize("nodes", [1, 2])
def test_onsale_simulation_runs_and_the_queue_keeps_its_order(tmp_path, nodes):
    """With two web nodes the buyers are spread over both: one queue, pushed to either node's pages."""
    env = dict(os.environ)  # the test MongoDB and Redis (conftest); the run uses a database of its own
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env["BENCH_WORKERS"] = "2"
    command = ["-m", "bench.onsale", "--small", "--variant", "push", "--nodes", str(nodes), "--out", str(tmp_path)]
    run = subprocess.run(
        [sys.executable, *command],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (result,) = json.loads((tmp_path / "onsale.json").read_text())["runs"]
    assert result["http_5xx"] == 0 and result["transport_errors"] == 0, result["errors"]
    assert result["seats_sold_twice"] == 0 and result["invariant_breaches"] == 0, result["breach_examples"]
    assert result["outcomes"].get("bought", 0) > 100
    admission = result["admission"]
    assert admission["order_rising"] and admission["early_before_late"] and admission["out_of_order"] == 0
    assert admission["admitted"] >= result["outcomes"]["bought"]
    assert result["pushed_events"] > 0 and result["peak_queue_streams"] > 0
    # the seat map goal's pages are those of buyers let in (each buyer opened one before buying);
    # the arrivals after the sale opened (half of them: sale at +5 s of 10) were sent to the queue
    assert result["outcomes"]["bought"] <= result["maps_after_sale"] <= admission["admitted"]
    assert result["sent_to_queue"] > 0 and result["sent_to_queue_p99_ms"] is not None
    assert len(result["web_workers"]) == 2 * nodes  # every node's workers answered (half the buyers each)
    assert (tmp_path / "onsale.md").read_text().startswith("# On-sale simulation")
