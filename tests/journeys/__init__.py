"""Journeys across commands, end to end, as users take them (issue 28, item 8)."""
