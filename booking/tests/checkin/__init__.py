"""Tests of booking.checkin."""
