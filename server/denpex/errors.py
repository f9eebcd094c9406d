"""Errors that the CLI turns into one clear line and exit code 2."""


class DenpexError(Exception):
    """A user-facing problem: bad input, bad rule file, bad usage."""


class RuleBookError(DenpexError):
    """A rule file that does not load or does not match the schema."""
