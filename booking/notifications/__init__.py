"""Notifications: every mail the product sends (confirmations, change, payment and reservation notices)."""
