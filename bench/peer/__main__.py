"""``python -m bench.peer [--seconds S] [--buyers N] [--out DIR]``: ours against pretix.

Not in CI: it installs pretix into .bench-peer/venv and needs PostgreSQL (docs/performance.md)."""

import argparse
import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
os.environ.setdefault("LOG_LEVEL", "WARNING")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.peer", description=__doc__)
    parser.add_argument("--seconds", type=float, default=8.0, help="measured seconds per row")
    parser.add_argument("--buyers", type=int, default=200, help="buyers in the rush (40 seats)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "results")
    parser.add_argument("--no-chart", action="store_true")
    args = parser.parse_args(argv)

    import django

    django.setup()
    from . import pretix_env, report
    from .run import run

    results = run(args.seconds, args.buyers, log=lambda m: print(m, flush=True))
    results["pretix_version"] = pretix_env.PRETIX_VERSION
    results["commit"] = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    path = report.write(results, args.out, with_chart=not args.no_chart)
    print(path.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
