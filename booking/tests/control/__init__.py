"""Tests of booking.control."""
