# Developer tasks. `make run` and `make test` are the README's two commands; every target uses the
# project's venv (scripts/_env.sh creates it and installs requirements-dev.txt).
PYTHON ?= .venv/bin/python
VENV_BIN := $(dir $(PYTHON))

.PHONY: run test test-fast lint typecheck format venv messages lock architecture url-map api-schema

# The whole app with demo data (PORT, DEVMONGO_PORT, DEV_REDIS_PORT move it; see README).
run:
	./scripts/run.sh

# Every test, in parallel: what CI runs (.ci/run). Extra pytest arguments: make test ARGS="-k hold".
test:
	./scripts/test.sh $(ARGS)

# Everything but the slow tests (hypothesis differential runs, worker and server subprocesses, the
# benchmark smoke run) and the browser tests: the quick loop while working.
test-fast:
	./scripts/test.sh -m "not slow and not browser" $(ARGS)

# What CI checks besides the tests (.ci/run runs the same three).
lint: venv
	$(VENV_BIN)ruff check .
	$(VENV_BIN)ruff format --check .
	$(VENV_BIN)mypy

# mypy with django-stubs on booking/ (configured in pyproject.toml).
typecheck: venv
	$(VENV_BIN)mypy

# booking/'s import rules (no loop, layers only downward, no ContextVar below web, no private
# names across modules) against scripts/architecture_baseline.txt; --all lists the known ones too.
architecture: venv
	$(PYTHON) scripts/check_architecture.py $(ARGS)

# The URL map in docs/architecture.md (each URL, its view, the domain functions it uses), written
# from the URLconf; tests/architecture/test_url_map.py fails while it is stale.
url-map: venv
	$(PYTHON) scripts/url_map.py --write

# The REST API's OpenAPI schema kept in docs/api/openapi.json (booking/tests/api/test_schema.py
# fails when the API changes without it).
api-schema: venv
	$(PYTHON) scripts/api_schema.py --write

# Apply ruff's formatting and its fixable lint rules.
format: venv
	$(VENV_BIN)ruff format .
	$(VENV_BIN)ruff check --fix .

# The German catalog: extract new strings into locale/de (then translate them; the completeness
# test, booking/tests/core/test_i18n_catalog.py, names any left) and compile (Babel, booking/core/catalogs.py).
MESSAGES_IGNORE := --ignore=.venv --ignore=bench --ignore=chaos --ignore=tests --ignore=devmongo --ignore=deploy \
	--ignore=staticfiles --ignore='booking/tests/*' --ignore='static/vendor/*' --ignore='*/migrations/*'
messages: venv
	$(PYTHON) manage.py makemessages -l de --no-location $(MESSAGES_IGNORE)
	$(PYTHON) manage.py makemessages -l de --no-location -d djangojs $(MESSAGES_IGNORE)
	$(PYTHON) manage.py compile_catalogs

# Production's set (requirements.txt) resolved to exact versions: what the image and both scripts install.
lock: venv
	$(VENV_BIN)uv pip compile --universal --python-version 3.12 --quiet --no-header requirements.txt -o requirements.lock

venv:
	@bash -c 'source scripts/_env.sh && ensure_venv'

# Reliability runs (docs/reliability.md).
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
.PHONY: bench bench-small bench-peer
bench:
	$(PYTHON) -m bench
	$(PYTHON) -m bench.api --scale $(or $(API_SCALE),1)

# The REST API alone (docs/performance.md, "REST API"); API_SCALE=0.1 for a quicker run.
.PHONY: bench-api
bench-api:
	$(PYTHON) -m bench.api --scale $(or $(API_SCALE),1)

bench-small:
	$(PYTHON) -m bench --small --no-chart

# Ours against pretix: pretix from PyPI in its own venv (.bench-peer/), its PostgreSQL
# database on the local server, the same buyers against both; results in bench/results/peer.md.
# Not in CI (minutes, and pretix's first install and migrate take several more).
bench-peer:
	$(PYTHON) -m bench.peer

# Live updates: push (SSE from a change stream) vs polling, and SSE viewers one web process holds.
.PHONY: bench-push
bench-push:
	$(PYTHON) -m bench.push

# Sales reports at 1,000 sessions / 500,000 orders (docs/performance.md, "Reports"); SCALE=0.2 for a quicker run.
.PHONY: bench-reports
bench-reports:
	$(PYTHON) -m bench.reports --scale $(or $(SCALE),1)

# The staff order list's pages and exports alone at 500,000 orders (SCALE=0.2: 100,000).
.PHONY: bench-orders
bench-orders:
	$(PYTHON) -m bench.reports --only-orders --samples 3 --scale $(or $(SCALE),1)

# The on-sale simulation (docs/performance.md "On-sale simulation"): 5,000 buyers for
# the 830-seat hall: the waiting room pushed (SSE), polled, and without; results in bench/results/onsale.md.
.PHONY: bench-onsale bench-onsale-small
bench-onsale:
	$(PYTHON) -m bench.onsale

bench-onsale-small:
	$(PYTHON) -m bench.onsale --small --out bench/results/small

# What waiting buyers cost one web process: pushed (the hub) and polled, in CPU seconds.
.PHONY: bench-waiting
bench-waiting:
	$(PYTHON) -m bench.waiting
