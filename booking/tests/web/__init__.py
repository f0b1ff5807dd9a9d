"""Tests of booking.web."""
