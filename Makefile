# Reliability runs (docs/reliability.md). Every target uses the project's venv.
PYTHON ?= .venv/bin/python

.PHONY: chaos chaos-ci chaos-control chaos-control-ci

# Full size: >= 500 buyers on one session, several minutes, faults injected.
chaos:
	$(PYTHON) -m chaos --size full

# CI size: a few minutes at most; fails on any breach.
chaos-ci:
	$(PYTHON) -m chaos --size ci

# The control: the hold's conditional filter weakened; passes only if the harness catches it.
chaos-control:
	$(PYTHON) -m chaos --size full --control

chaos-control-ci:
	$(PYTHON) -m chaos --size ci --control

# Performance (docs/performance.md): the real stack on loopback, one table + chart in bench/results/.
.PHONY: bench bench-small
bench:
	$(PYTHON) -m pip install --quiet matplotlib==3.11.2
	$(PYTHON) -m bench

bench-small:
	$(PYTHON) -m bench --small --no-chart

# The on-sale simulation (issue 19; docs/performance.md "On-sale simulation"): 5,000 buyers for
# the 830-seat hall, with the waiting room and without; results in bench/results/onsale.md.
.PHONY: bench-onsale bench-onsale-small
bench-onsale:
	$(PYTHON) -m bench.onsale

bench-onsale-small:
	$(PYTHON) -m bench.onsale --small --out bench/results/small
