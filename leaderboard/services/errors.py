"""Exceptions raised by services; the API's exception handler and the forms turn them into messages."""


class ServiceError(Exception):
    """A request the service refuses, with a message for the user (HTTP 400)."""

    status_code = 400

    def __init__(self, message: str, *, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field


class NotAllowed(ServiceError):
    """The user may not do this (HTTP 403)."""

    status_code = 403


class QuotaExceeded(ServiceError):
    """A submission quota is used up (HTTP 429)."""

    status_code = 429


class ChallengeClosed(ServiceError):
    """The challenge does not accept submissions now (HTTP 409)."""

    status_code = 409
