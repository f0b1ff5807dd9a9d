"""Domain services: every write the product makes. No HTTP in here.

Views, admin pages, Celery tasks and management commands all call these functions.
"""
