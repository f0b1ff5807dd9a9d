# The app's image for compose.yaml: web (gunicorn managing uvicorn workers: ASGI, as the Procfile), worker and
# beat run it with different commands. It holds the product only (.dockerignore).
FROM python:3.12-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY requirements.txt requirements.lock ./
RUN pip install --no-cache-dir -r requirements.txt -c requirements.lock
COPY . .
RUN python manage.py collectstatic --noinput && python manage.py compile_catalogs && useradd --system --home /app theater && mkdir -p /var/lib/theater && chown theater /var/lib/theater
USER theater
EXPOSE 8000
CMD ["gunicorn", "theater_site.asgi:application", "--worker-class", "uvicorn_worker.UvicornWorker", "--workers", "4", "--graceful-timeout", "10", "--bind", "0.0.0.0:8000"]
