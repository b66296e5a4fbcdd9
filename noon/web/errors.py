"""Refusals of the page's data layer, mapped to HTTP statuses by the app."""

from __future__ import annotations

from typing import Any

from noon.errors import NoonError


class WebError(NoonError, ValueError):
    """A request the page's data layer refuses (HTTP 400); the message says what to do."""


class NotFound(WebError):
    """HTTP 404."""


class Stale(WebError):
    """What the page showed changed meanwhile (HTTP 409); ``current`` says what is current."""

    def __init__(self, message: str, current: dict[str, Any]) -> None:
        super().__init__(message)
        self.current = current
