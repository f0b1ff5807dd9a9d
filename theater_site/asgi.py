import os

from django.conf import settings
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "theater_site.settings")
application = get_asgi_application()
if settings.DEBUG:
    # Development serves static files itself, as runserver does (production: WhiteNoise).
    from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

    application = ASGIStaticFilesHandler(application)
