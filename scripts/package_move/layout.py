"""The target layout of booking/ (issue 27), old module -> new module. Adapt where the code says
better, but keep this file the single source of the mapping (the move script and the architecture
checker both read it). Modules not listed stay where they are (migrations, management commands,
templatetags, tests are handled by the move script's own rules)."""

MOVES = {
    # core: infrastructure and the domain's words; imports nothing above it
    "booking.clock": "booking.core.clock",
    "booking.ids": "booking.core.ids",
    "booking.errors": "booking.core.errors",
    "booking.faults": "booking.core.faults",
    "booking.formatting": "booking.core.formatting",
    "booking.localized": "booking.core.localized",
    "booking.lru": "booking.core.lru",
    "booking.catalogs": "booking.core.catalogs",
    "booking.mongo": "booking.core.mongo",
    "booking.names": "booking.core.names",
    "booking.contrast": "booking.core.contrast",
    "booking.command_monitor": "booking.core.command_monitor",
    "booking.fragments": "booking.core.fragments",
    "booking.publish": "booking.core.publish",
    "booking.domain": "booking.core.domain",
    "booking.json_text": "booking.core.json_text",
    # venues: halls, layouts, seat grid, theaters, performances of sectioned venues
    "booking.layouts": "booking.venues.layouts",
    "booking.seat_grid": "booking.venues.seat_grid",
    "booking.seat_words": "booking.venues.seat_words",
    "booking.sections_text": "booking.venues.sections_text",
    "booking.venue_front": "booking.venues.venue_front",
    "booking.services.theaters": "booking.venues.theaters",
    "booking.services.performances": "booking.venues.performances",
    "booking.services.performance_index": "booking.venues.performance_index",
    # sales: the seat engine (label `booking` stays on the app that owns models/migrations)
    "booking.services.holds": "booking.sales.holds",
    "booking.services.hold_facts": "booking.sales.hold_facts",
    "booking.services.client_holds": "booking.sales.client_holds",
    "booking.services.admission": "booking.sales.admission",
    "booking.services.carts": "booking.sales.carts",
    "booking.services.checkout": "booking.sales.checkout",
    "booking.services.counter": "booking.sales.counter",
    "booking.services.exchanges": "booking.sales.exchanges",
    "booking.services.offers": "booking.sales.offers",
    "booking.services.orders": "booking.sales.orders",
    "booking.services.pricing": "booking.sales.pricing",
    "booking.services.promos": "booking.sales.promos",
    "booking.services.reservations": "booking.sales.reservations",
    "booking.services.retention": "booking.sales.retention",
    "booking.services.series": "booking.sales.series",
    "booking.services.session_cancel": "booking.sales.session_cancel",
    "booking.services.sessions": "booking.sales.sessions",
    "booking.services.listings": "booking.sales.listings",
    "booking.services.waiting_room": "booking.sales.waiting_room",
    "booking.services.wheelchair": "booking.sales.wheelchair",
    "booking.services.checkin": "booking.sales.checkin",
    "booking.services.reconcile": "booking.sales.reconcile",
    "booking.services.backfill": "booking.sales.backfill",
    "booking.selectors": "booking.sales.selectors",
    "booking.invariants": "booking.sales.invariants",
    "booking.tasks": "booking.sales.tasks",
    # payments: providers, the payment flow, refunds, receipts, money
    "booking.services.payments": "booking.payments.flow",
    "booking.services.refunds": "booking.payments.refunds",
    "booking.services.payment_settings": "booking.payments.settings",
    # notifications: every mail the product sends
    "booking.services.notifications": "booking.notifications.confirmations",
    "booking.services.change_notices": "booking.notifications.change_notices",
    "booking.services.payment_notices": "booking.notifications.payment_notices",
    "booking.services.reservation_notices": "booking.notifications.reservation_notices",
    # web helpers shared by the buyer's, the staff's and the door's pages
    "booking.buyer": "booking.web.buyer",
    "booking.ratelimits": "booking.web.ratelimits",
    "booking.middleware": "booking.web.middleware",
    "booking.page_cache": "booking.web.page_cache",
    "booking.health": "booking.web.health",
    "booking.live": "booking.web.live",
    "booking.push": "booking.web.push",
    "booking.presenters": "booking.web.presenters",
    "booking.seatmap_html": "booking.web.seatmap_html",
    "booking.order_history": "booking.web.order_history",
    "booking.ticket_pdf": "booking.web.ticket_pdf",
    "booking.login_lockout": "booking.web.login_lockout",
    # presale: the buyer's pages
    "booking.urls": "booking.presale.urls",
    "booking.forms": "booking.presale.forms",
    "booking.views": "booking.presale.views.pages",
    "booking.payment_views": "booking.presale.views.payment",
    "booking.exchange_views": "booking.presale.views.exchange",
    "booking.offer_views": "booking.presale.views.offers",
    "booking.queue_views": "booking.presale.views.queue",
    "booking.queue_panel": "booking.presale.queue_panel",
    "booking.queue_push": "booking.presale.queue_push",
    # checkin: the door
    "booking.checkin_views": "booking.checkin.views",
    "booking.checkin_urls": "booking.checkin.urls",
    "booking.checkin_presenters": "booking.checkin.presenters",
    # control: the staff site (booking/admin.py stays: Django's admin autodiscovers it)
    "booking.admin_forms": "booking.control.forms",
    "booking.staff": "booking.control",  # the package: booking.staff.X -> booking.control.X
    # demo data
    "booking.demo": "booking.sales.demo",
    "booking.demo_stadium": "booking.sales.demo_stadium",
}

# Layers, lowest first: a module may import its own layer and the layers below, never above.
LAYERS = [
    ["booking.core"],
    ["booking.venues"],
    ["booking.sales", "booking.payments", "booking.notifications", "booking.reports", "booking.models"],
    ["booking.web"],
    [
        "booking.presale",
        "booking.checkin",
        "booking.control",
        "booking.admin",
        "booking.templatetags",
        "booking.management",
    ],
]

# --- for the move script (move.py) ---

# What stays where it is: Django finds these by their place in the app (admin autodiscovery, models
# and migrations of the app labelled `booking`, management commands, template tags), and the
# packages that already are one domain each.
STAYS = [
    "booking.admin",
    "booking.apps",
    "booking.models",
    "booking.migrations",
    "booking.management",
    "booking.templatetags",
    "booking.payments",
    "booking.reports",
]

# Packages every module of which moves: they go away.
DISSOLVED = ["booking.services"]

# The module holding the Celery tasks (their registered names stay the old dotted names).
TASKS_MODULE = "booking.tasks"

# One line each for the packages the move creates (their __init__.py docstring).
PACKAGE_DOCS = {
    "booking.core": (
        "Infrastructure and the domain's words: MongoDB, clock, ids, errors, fault points, formatting, caches."
    ),
    "booking.venues": "Venues: theaters and their layouts, the seat grid, sectioned venues and their performances.",
    "booking.sales": (
        "Sales: holds, carts, checkout, orders, offers and promos, sessions, exchanges, the waiting room, tasks."
    ),
    "booking.notifications": (
        "Notifications: every mail the product sends (confirmations, change, payment and reservation notices)."
    ),
    "booking.web": (
        "Web helpers shared by the buyer's, the staff's and the door's pages: cookies, middleware, rate limits, push."
    ),
    "booking.presale": "The buyer's pages: what's on, seat maps, cart, checkout, payment, orders, the waiting room.",
    "booking.presale.views": "The buyer's views, one module per part of the purchase.",
    "booking.checkin": "The door: check-in pages for door staff on a phone.",
}

# Tests mirror the packages: booking/tests/<package>/test_*.py. Lowest layer first (a tie in the
# import count goes to the higher one).
TEST_PACKAGES = [
    "core",
    "venues",
    "sales",
    "payments",
    "notifications",
    "reports",
    "web",
    "presale",
    "checkin",
    "control",
]
# Modules outside the packages count for: booking.X -> package.
TEST_PACKAGE_OF = {"models": "sales", "admin": "control", "templatetags": "presale", "management": "sales"}
# Test files named like this go to that package whatever they import (admin tests import the
# sales services to set things up, yet test the staff pages).
TEST_NAME_PREFIXES = {"test_admin_": "control", "test_checkin": "checkin"}
# Where today's test files go, by what they test (their imports are mostly set-up: sales services,
# core's mongo and clock). A test file not listed here (new on main) goes by TEST_NAME_PREFIXES,
# else where most of its booking imports are; the move script prints each decision.
_PLACED = {
    "core": """test_formatting test_lru test_contrast test_publish test_i18n_catalog test_query_audit
        test_shard_keys test_unique_indexes""",
    "venues": "test_layouts test_seat_grid test_sections test_category_names test_venue_names",
    "sales": """test_access_patterns test_admin_services test_backfill_orders test_best_available
        test_checkout test_counter test_counter_hours test_crash_recovery test_demo test_exchanges
        test_holds test_house_seats_return test_limit_boundaries test_listings test_offer_documents
        test_offer_invariants test_presale test_promos test_race test_race_windows
        test_reconcile_lost_items test_retention test_sale_windows test_series_actions
        test_session_cancel test_session_cancel_worker test_sort_ties test_tasks test_ticket_types
        test_waiting_room test_waiting_room_redis test_wheelchair_declaration test_wheelchair_release
        test_worker""",
    "payments": """test_money test_payment_crashes test_payment_invariants test_payment_webhooks
        test_payments test_promo_late_payment test_receipts test_refunds test_stripe_idempotency
        test_stripe_provider test_localstripe_store""",
    "notifications": "test_change_notices test_payment_notices test_reservation_mails test_worker_mail",
    "reports": "test_reports",
    "web": "test_push test_whats_on_cache test_seatmap_html test_i18n test_http_methods test_login_lockout",
    "presale": """test_views test_payment_views test_ticket_type_views test_waiting_room_views
        test_queue_push test_whats_on test_buyer_bugs test_map_bugs test_cart_summary
        test_buyer_pages test_seat_map_cancelation_and_contrast""",
    "checkin": "test_checkin test_checkin_exchanged test_checkin_views",
    "control": """test_admin_carts_orders test_admin_offers test_admin_order_changes
        test_admin_payment_settings test_admin_performances test_admin_permissions
        test_admin_promo_codes test_admin_sale_windows test_admin_sessions test_admin_theaters
        test_admin_waiting_rooms test_counter_views""",
}
TEST_PLACES = {name: package for package, names in _PLACED.items() for name in names.split()}
