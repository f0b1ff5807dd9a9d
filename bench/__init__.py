"""The benchmark: the real stack on loopback, every access pattern measured side by side with its
floors (Django hello world, a bare pymongo update) and the naive baseline (a template loop).

    .venv/bin/python -m bench            # full size, writes bench/results/
    .venv/bin/python -m bench --small    # CI size: checks it works and the command counts

See docs/performance.md.
"""
