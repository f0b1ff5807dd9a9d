"""Tests of booking.notifications."""
