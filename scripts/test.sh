#!/usr/bin/env bash
# Runs every test. Needs redis-server (started by the tests on a free port unless REDIS_URL is
# set) and Debian's chromium for the browser tests; installs both when root and missing.
# The tests run in parallel (pytest-xdist), TEST_WORKERS processes, each with its own MongoDB
# stand-in and Redis; `-n 0` among the arguments runs them in this process. The default is one more
# than the cores: about half of the suite's time is waiting (browsers, Celery workers, timers).
# The slow and browser tests come first (conftest.py) and each worker is handed one test at a time,
# so the long tests spread over the workers and the short ones fill the gaps at the end.
source "$(dirname "$0")/_env.sh"
ensure_venv
ensure_debian_package redis-server redis-server
ensure_debian_package chromium chromium
ensure_debian_package xgettext gettext  # makemessages, for the catalog completeness test
ensure_debian_package caddy caddy  # runs deploy/Caddyfile in the proxy's routing test
export DJANGO_SETTINGS_MODULE=theater_site.settings_test
exec .venv/bin/pytest -n "${TEST_WORKERS:-$(($(nproc) + 1))}" --dist load --maxschedchunk 1 "$@"
