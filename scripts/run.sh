#!/usr/bin/env bash
# Runs the whole app for a person to try: MongoDB stand-in (unless MONGODB_URI is set), Redis
# (unless REDIS_URL is set), Celery worker and beat, demo data, and the web server. Ctrl-C stops all.
source "$(dirname "$0")/_env.sh"
ensure_venv
mkdir -p .run
PORT=${PORT:-8000}
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
  echo "stripe: .venv/bin/localstripe --port ${stripe_port}" >> "$procfile"
  echo "stripehook: .venv/bin/python manage.py localstripe_webhook --url http://127.0.0.1:${PORT}" >> "$procfile"
fi
cat >> "$procfile" <<PROCS
web: .venv/bin/python manage.py wait_for_services && .venv/bin/python manage.py seed_demo && .venv/bin/python manage.py runserver 127.0.0.1:${PORT} --noreload
worker: .venv/bin/python manage.py wait_for_services && .venv/bin/celery -A theater_site worker --loglevel INFO --concurrency 2
beat: .venv/bin/python manage.py wait_for_services && .venv/bin/celery -A theater_site beat --loglevel INFO --schedule .run/celerybeat-schedule
PROCS

.venv/bin/python manage.py migrate --noinput >/dev/null
.venv/bin/python manage.py create_dev_admin
echo
echo "  Theater booking is starting at http://127.0.0.1:${PORT}/  (staff: http://127.0.0.1:${PORT}/admin/, admin / admin)"
echo
exec .venv/bin/honcho -f "$procfile" -d "$ROOT" start
