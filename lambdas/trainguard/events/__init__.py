"""Parsers: raw AWS events -> domain objects."""
