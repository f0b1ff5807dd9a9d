"""Tests of booking.sales."""
