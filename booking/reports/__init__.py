"""Sales reports and exports for staff: figures per session and per series, sales per day, the
attendee list, and their CSV / XLSX / PDF / SVG files.

``tally`` counts what the orders of some sessions say; ``summaries`` keeps that count per session
(a materialized view, recounted when a write ``marks`` the session's orders: docs/architecture.md,
"Reports and exports"); ``figures`` adds the summaries of a report's sessions up; ``exports`` turns
a report into files. The admin pages are booking/control/reports.py.
"""
