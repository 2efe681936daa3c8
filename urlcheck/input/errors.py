"""The input package's one exception."""

from __future__ import annotations


class InputError(Exception):
    """The input file cannot be used; the message names the file and the problem."""
