"""``python -m bench [--small] [--out DIR] [--only FLOWS | --scenario]``: run the benchmark and write the results."""

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
os.environ.setdefault("LOG_LEVEL", "WARNING")  # no line per checkout from the scenario


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--small", action="store_true", help="CI size: seconds, not minutes; no timing goals")
    parser.add_argument(
        "--out", type=Path, default=None, help="results directory (default bench/results/, or bench/results/small/)"
    )
    parser.add_argument("--no-chart", action="store_true", help="skip the PNG (no matplotlib needed)")
    parser.add_argument(
        "--only",
        default="",
        help="comma-separated table flows (e.g. whats_on,checkout_box_office): the accounting pass, hello "
        "world and these rows only, written to bench/results/only/ unless --out",
    )
    parser.add_argument(
        "--scenario",
        action="store_true",
        help="the seed scenario alone (engine calls, no web server), written to bench/results/scenario/ unless --out",
    )
    args = parser.parse_args(argv)

    from . import report
    from .run import FULL, SMALL, TABLE_FLOWS, run, run_scenario_only

    size = SMALL if args.small else FULL
    only = tuple(name for name in args.only.split(",") if name)
    unknown = set(only) - {flow.__name__ for flow in TABLE_FLOWS}
    if unknown:
        parser.error(f"no such flow: {', '.join(sorted(unknown))}")
    results_dir = Path(__file__).resolve().parent / "results"
    if args.scenario:
        out = args.out or results_dir / ("scenario" if size is FULL else f"scenario-{size.name}")
        path = report.write(run_scenario_only(size, log=lambda msg: print(msg, flush=True)), out, with_chart=False)
        print(path.read_text())
        return 0
    out = args.out or (results_dir / "only" if only else results_dir if size is FULL else results_dir / size.name)
    results = run(size, log=lambda msg: print(msg, flush=True), only=only)
    path = report.write(results, out, with_chart=not args.no_chart)
    print(path.read_text())
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
