"""The door: check-in pages for door staff on a phone."""
