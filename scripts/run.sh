#!/usr/bin/env bash
# Runs the whole app for a person to try: MongoDB stand-in (unless MONGODB_URI is set), Redis
# (unless REDIS_URL is set), Celery worker and beat, demo data, and the web server. Ctrl-C stops all.
# PORT (8000), DEVMONGO_PORT (27017), DEV_REDIS_PORT (6390) and DEV_STRIPE_PORT (8420) move the web
# server, the MongoDB stand-in, Redis and localstripe: every port the stack opens (README; a second
# checkout's stack beside the first, tests/dev/test_run_sh.py). The stack's settings go to
# .run/dev.env, which every manage.py command reads.
source "$(dirname "$0")/_env.sh"
ensure_venv
mkdir -p .run
PORT=${PORT:-8000}
export SITE_URL=${SITE_URL:-http://127.0.0.1:${PORT}}  # the confirmation mail's links
procfile=.run/Procfile
: > "$procfile"

if [ -z "${MONGODB_URI:-}" ]; then
  export MONGODB_URI="mongodb://127.0.0.1:${DEVMONGO_PORT:-27017}/?replicaSet=rs0"
  echo "mongo: .venv/bin/python -m devmongo --port ${DEVMONGO_PORT:-27017} --replset rs0 --data .run/devmongo.bson" >> "$procfile"
fi
if [ -z "${REDIS_URL:-}" ]; then
  ensure_debian_package redis-server redis-server
  redis_port=${DEV_REDIS_PORT:-6390}
  export REDIS_URL="redis://127.0.0.1:${redis_port}/0"
  echo "redis: redis-server --port ${redis_port} --bind 127.0.0.1 --save '' --appendonly no --dir .run" >> "$procfile"
fi
if [ -z "${STRIPE_SECRET_KEY:-}" ]; then
  # No real Stripe key: card payments go to localstripe, a fake Stripe server (its own fake
  # Stripe.js included), through the same official library. Test cards: README "Payments".
  stripe_port=${DEV_STRIPE_PORT:-8420}
  export STRIPE_SECRET_KEY=sk_test_localstripe STRIPE_PUBLISHABLE_KEY=pk_test_localstripe
  export STRIPE_WEBHOOK_SECRET=${STRIPE_WEBHOOK_SECRET:-whsec_dev_localstripe}
  export STRIPE_API_BASE="http://127.0.0.1:${stripe_port}"
  export STRIPE_JS_URL="http://127.0.0.1:${stripe_port}/js.stripe.com/v3/"
  echo "stripe: .venv/bin/python scripts/localstripe_server.py --port ${stripe_port} --data .run/localstripe.pickle" >> "$procfile"
  echo "stripehook: .venv/bin/python manage.py localstripe_webhook --url http://127.0.0.1:${PORT}" >> "$procfile"
fi
# What the processes below run with, for every other manage.py command too (theater_site/settings.py
# reads it for variables the environment lacks): operator commands reach this stack as they are.
dev_env=.run/dev.env
{
  echo "# Written by scripts/run.sh at each start: the dev stack's settings, read by theater_site/settings.py"
  echo "# for every variable not set in the environment. DEV_ENV_FILE= (empty) ignores this file."
  for name in MONGODB_URI MONGODB_DB REDIS_URL SITE_URL DATABASE_URL EMAIL_URL \
      STRIPE_SECRET_KEY STRIPE_PUBLISHABLE_KEY STRIPE_WEBHOOK_SECRET STRIPE_API_BASE STRIPE_JS_URL; do
    if [ -n "${!name:-}" ]; then echo "${name}=${!name}"; fi
  done
} > "$dev_env.tmp"
chmod 600 "$dev_env.tmp"
mv "$dev_env.tmp" "$dev_env"

cat >> "$procfile" <<PROCS
web: .venv/bin/python manage.py wait_for_services && .venv/bin/python manage.py seed_demo && .venv/bin/uvicorn theater_site.asgi:application --host 127.0.0.1 --port ${PORT} --no-access-log
worker: .venv/bin/python manage.py wait_for_services && .venv/bin/celery -A theater_site worker --loglevel INFO --concurrency 2
beat: .venv/bin/python manage.py wait_for_services && .venv/bin/celery -A theater_site beat --loglevel INFO --schedule .run/celerybeat-schedule
PROCS

.venv/bin/python manage.py migrate --noinput >/dev/null
.venv/bin/python manage.py compile_catalogs >/dev/null  # the German .mo from locale/de (Babel, no gettext)
.venv/bin/python manage.py create_dev_admin
echo
echo "  Theater booking is starting at http://127.0.0.1:${PORT}/  (staff: http://127.0.0.1:${PORT}/admin/, admin / admin)"
echo
exec .venv/bin/honcho -f "$procfile" -d "$ROOT" start
