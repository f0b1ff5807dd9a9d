"""Tests of booking.core."""
