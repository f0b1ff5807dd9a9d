"""Venues: theaters and their layouts, the seat grid, sectioned venues and their performances."""
