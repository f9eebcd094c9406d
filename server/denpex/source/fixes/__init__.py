"""Fixes: text edits and applying them, the builders rules share, the eager fallback and suppression comments."""
