"""The app's own settings plus two benchmark-only views (hello world, the naive template loop)."""

from theater_site.settings import *  # noqa: F403
from theater_site.settings import BASE_DIR, TEMPLATES

ROOT_URLCONF = "bench.urls"
TEMPLATES[0]["DIRS"] = [*TEMPLATES[0]["DIRS"], BASE_DIR / "bench" / "templates"]

# Static files straight from the source folders (no collectstatic step for a benchmark run).
WHITENOISE_USE_FINDERS = True
