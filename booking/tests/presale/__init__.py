"""Tests of booking.presale."""
