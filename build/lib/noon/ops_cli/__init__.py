"""Operator subcommands of the ``noon`` CLI."""
