"""The push benchmark at smoke size (bench/push.py --small: 200 SSE viewers and 20 pollers, then
300 viewers idle and in a short rush): it runs from one command, every viewer connects and reads
every change, idle viewers cost no MongoDB reads, and the web worker survives the rush. No timing
assertions: this machine's timings are not the product's."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_push_benchmark_runs_and_every_viewer_reads_every_change(tmp_path):
    env = dict(os.environ)
    env.pop("DJANGO_SETTINGS_MODULE", None)
    run = subprocess.run(
        [sys.executable, "-m", "bench.push", "--small", "--out", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    result = json.loads((tmp_path / "push.json").read_text())
    spread, capacity = result["propagation"], result["capacity"]
    assert spread["viewers_connected"] == spread["viewers"] and spread["refused"] == 0
    assert spread["stages"]["read"]["n"] == spread["push_expected"]  # every viewer, every change
    assert spread["poll"]["n"] > 0 and spread["reloads"] == 0
    assert capacity["connected"] == capacity["asked"]
    assert set(capacity["idle_commands"]) <= {"getMore"}  # the one change stream's, no read per viewer
    assert capacity["worker_survived"] is True
    assert capacity["stages"]["read"]["n"] == capacity["rush_expected"]
    assert (tmp_path / "push.md").read_text().startswith("# Push vs polling")
