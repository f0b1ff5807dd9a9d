"""Tests of booking.venues."""
