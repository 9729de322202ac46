"""The one error a user is shown as it is: a configuration or usage problem, named."""

from __future__ import annotations


class ConfigError(Exception):
    """A configuration (or usage) problem, with a message fit to show a human as it is."""
