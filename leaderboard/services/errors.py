"""Exceptions raised by services; the API's exception handler and the forms turn them into messages."""


class ServiceError(Exception):
    """A request the service refuses, with a message for the user (HTTP 400)."""

    status_code = 400

    def __init__(self, message: str, *, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field


class NotFound(ServiceError):
    """The object asked for does not exist, or not for this user (HTTP 404)."""

    status_code = 404


class TooLarge(ServiceError):
    """An upload, a file in it or a part of a body over its size limit (HTTP 413, the schema's code for it)."""

    status_code = 413


class NotAllowed(ServiceError):
    """The user may not do this (HTTP 403)."""

    status_code = 403


class QuotaExceeded(ServiceError):
    """A submission quota is used up (HTTP 429; ``retry_after``: seconds until a slot frees, if known)."""

    status_code = 429

    def __init__(self, message: str, *, field: str | None = None, retry_after: float | None = None):
        super().__init__(message, field=field)
        self.retry_after = retry_after


class ChallengeClosed(ServiceError):
    """The challenge does not accept submissions now (HTTP 409)."""

    status_code = 409


#: What a contestant reads when the host's program fails on their file: never its message, which may quote
#: hidden labels (the hosts read that in the audit log). The file counts toward the quota like any other.
PROGRAM_FAILED = (
    "The host's scoring program failed on this submission; the hosts have been told. "
    "It counts toward your quota like any scored submission."
)


class PlatformError(Exception):
    """A fault of the platform, not of the contestant: the work is retried, and never charged to a quota."""
