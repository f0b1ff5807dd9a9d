"""Tests of booking.reports."""
