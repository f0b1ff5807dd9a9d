"""Sales reports and exports for staff: figures per session and per series, sales per day, the
attendee list, and their CSV / XLSX / PDF / SVG files.

``figures`` reads (aggregations over the orders of the sessions asked for, through the
``lines.sessionId`` index: docs/architecture.md, "Reports"); ``exports`` turns what it read into
files. The admin pages are booking/staff/reports.py.
"""
