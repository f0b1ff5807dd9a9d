"""``python -m bench [--small] [--out DIR]``: run the benchmark and write the results."""

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
    args = parser.parse_args(argv)

    from . import report
    from .run import FULL, SMALL, run

    size = SMALL if args.small else FULL
    results_dir = Path(__file__).resolve().parent / "results"
    out = args.out or (results_dir if size is FULL else results_dir / size.name)
    results = run(size, log=lambda msg: print(msg, flush=True))
    path = report.write(results, out, with_chart=not args.no_chart)
    print(path.read_text())
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
