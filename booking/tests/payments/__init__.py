"""Tests of booking.payments."""
