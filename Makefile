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

# Live updates: push (SSE from a change stream) vs polling, and SSE viewers one web process holds.
.PHONY: bench-push
bench-push:
	$(PYTHON) -m bench.push
