"""Refuse an oversized multipart upload while it streams in, before it is written anywhere.

Django's parser writes every file of a request to disk before the view sees the first
one: 40 prediction files of 19 MB (725 MB) took 14.6 s to be refused by their count.
``BoundedUploadHandler`` runs first among ``FILE_UPLOAD_HANDLERS``: it counts the files
and the bytes of each against the limits in force for the request (``limits.upload_limit``
of the field's kind, ``FIELD_KINDS``, the file count and, for a submission, the challenge's own k), and at the first file or byte over a limit it
drops what was stored, reads the rest of the body without keeping it (so the client
receives the answer), and raises the service's error naming the limit (issue 22): ``TooLarge``
(413, the schema's code for a body or file over its size) for bytes, ``ServiceError`` (400) for a
file count, and a file in a field no form or endpoint takes files in (spooled to disk without a bound before:
4 GB to an anonymous ``/api/auth/token/``; on a page outside the API, a 400). Neither is a ``MultiPartParserError``, which DRF would turn into a bare 400 "Multipart
form parse error"; the API's exception handler answers them in its error shape.

The web forms that take files (``WEB_FORMS``) get the same message on the form instead of a
bare 400 page: there the handler stops the upload (``StopUpload``) with the fields that came
before the file kept (the CSRF token among them), and leaves the refusal on the request for the
view (``upload_refusal``), which shows it on the re-rendered form with status 400.
"""

from __future__ import annotations

import time

from django.core.exceptions import BadRequest
from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.urls import Resolver404, resolve

from .limits import MB, upload_file_count_limit, upload_limit
from .models import Challenge
from .services.errors import ServiceError, TooLarge

DATASET_FIELDS = ("dataset", "test_dataset", "test_labels", "hidden_labels")
#: The form field a file travels in -> its kind of upload (``limits.upload_limit``): the readers apply the same.
FIELD_KINDS = {
    **dict.fromkeys(DATASET_FIELDS, "dataset"),
    "recipe": "recipe",
    "files": "prediction",  # a submission's prediction files, or a results import's files
    "instances": "prediction",  # a results import's list of instance ids
    "bundle": "bundle",
    "program": "program",  # a host's scoring program
}
# URL names that take a submission's files: the API's, and the challenge page's form; and a results import's.
SUBMISSION_URLS = ("api-challenge-submissions", "challenge-detail")
IMPORT_URLS = ("api-results-imports", "results-import")
# Views that show a refusal on their form (they call ``upload_refusal``); elsewhere it is a 400.
WEB_FORMS = (
    "challenge-create",
    "challenge-detail",
    "challenge-bundle-import",
    "results-import",
    "challenge-scoring-program",
)
DRAIN_SECONDS = 0.5  # past this, the connection is closed rather than the whole body read


def upload_refusal(request) -> ServiceError | None:
    """Why the handler stopped this web form's upload (the field and the limit), or None."""
    _ = request.POST  # the body is parsed (and the refusal, if any, made) on first access
    return getattr(request, "_upload_refusal", None)


class BoundedUploadHandler(FileUploadHandler):
    """Counts files and bytes while the body streams; stores nothing itself."""

    def handle_raw_input(self, input_data, META, content_length, boundary, encoding=None):
        self._input = input_data
        self._files, self._field, self._pending = 0, None, None
        url_name = self._url_name()
        self._on_web_form = url_name in WEB_FORMS
        k, self._on_submission = self._challenge_k(url_name)
        per = "submission" if self._on_submission else "import" if url_name in IMPORT_URLS else "upload"
        self._max_files, self._who = self._file_limit(k, per)
        if self._on_submission and content_length:
            self._check_request_size(content_length)
        return None  # the next handlers parse as usual

    def _check_request_size(self, content_length: int) -> None:
        """A submission can't be larger than its files at their limit (+1 MB of fields and headers)."""
        per_file = upload_limit("prediction")
        most = self._max_files * per_file.max_bytes // MB + 1
        if content_length > most * MB:
            self._refuse(
                f"the request is {content_length / MB:.1f} MB; a submission here takes at most "
                f"{self._max_files} files of {per_file.label} ({most} MB with its fields).",
                "files",
            )

    @staticmethod
    def _file_limit(k: int | None, per: str) -> tuple[int, str]:
        most = upload_file_count_limit()
        if k is not None and max(k, 1) < most:
            return max(k, 1), f"this challenge takes at most {max(k, 1)} (one per seed, k = {k})"
        return most, f"the limit is {most} files per {per}"

    def _url_name(self) -> str | None:
        if self.request is None:
            return None
        try:
            self._match = resolve(self.request.path_info)
        except Resolver404:
            return None
        return self._match.url_name

    def _challenge_k(self, url_name: str | None) -> tuple[int | None, bool]:
        """(k of the challenge a submission is posted to, whether this is a submission): one indexed query."""
        if url_name not in SUBMISSION_URLS:
            return None, False
        slug = self._match.kwargs.get("slug")
        return Challenge.objects.filter(slug=slug).values_list("k_runs", flat=True).first(), True

    def _byte_limit(self, field_name: str) -> tuple[int, str] | None:
        kind = FIELD_KINDS.get(field_name)
        if kind is None:
            return None
        limit = upload_limit(kind)
        return limit.max_bytes, limit.label

    def new_file(self, field_name, file_name, content_type, content_length, charset=None, content_type_extra=None):
        super().new_file(field_name, file_name, content_type, content_length, charset, content_type_extra)
        self._size, self._field = 0, field_name
        if self._pending is not None:
            self._refuse(*self._pending)
        self._limit = self._byte_limit(field_name)
        if self._limit is None:  # no form or endpoint takes a file there: it would be spooled to disk unbounded
            self._refuse(f"no file is taken in the field {field_name!r}.", field_name, ServiceError)
        if field_name == "files":
            self._files += 1
            if self._files > self._max_files:
                self._refuse(f"more than {self._max_files} files were uploaded; {self._who}.", "files", ServiceError)
        if self._limit is not None and content_length is not None and content_length > self._limit[0]:
            self._refuse(self._too_large(content_length), field_name)

    def receive_data_chunk(self, raw_data, start):
        self._size += len(raw_data)
        if self._limit is not None and self._size > self._limit[0]:
            self._refuse(self._too_large(self._size, more=True), self._field)
        return raw_data

    def file_complete(self, file_size):
        return None

    def upload_complete(self):
        """A body that ended before its ``Content-Length`` (the client went away) is refused, not parsed short:
        Django's parser takes an early end of the stream for the end of the form, so an upload cut after its
        second of three files was stored and scored as an entry of two (a reviewer's finding)."""
        if getattr(self.request, "_upload_refusal", None) is not None:
            return  # refused already (a file too large, too many): the body was left unread on purpose
        stream = getattr(self.request, "_stream", None)
        read, declared = getattr(stream, "_pos", None), getattr(stream, "limit", None)
        if read is None or declared is None or read >= declared:
            return
        message = (
            f"the request body ended after {read} of its {declared} bytes (the upload was interrupted); "
            "nothing was stored: send it again."
        )
        if self._on_web_form:
            self.request._upload_refusal = ServiceError(message, field="files")  # the view shows it on the form
            return
        if not self.request.path_info.startswith("/api/"):
            raise BadRequest(message)
        raise ServiceError(message, field="files")

    def _too_large(self, size: int, more: bool = False) -> str:
        told = f"larger than {self._limit[1]}" if more else f"{size / MB:.1f} MB"
        return f"{self.file_name} is {told}; the limit is {self._limit[1]} per file."

    def _refuse(self, message: str, field: str, error: type[ServiceError] = TooLarge):
        if self._on_web_form and self._field is None:
            self._pending = (message, field, error)  # wait for the first file: the fields before it (CSRF token) arrive
            return
        self._drain()
        if self._on_web_form:
            self.request._upload_refusal = error(message, field=field)
            raise StopUpload(connection_reset=True)  # the fields parsed so far stay in request.POST
        if self.request is not None and not self.request.path_info.startswith("/api/"):
            raise BadRequest(f"{field}: {message}")  # another page (a log-in's CSRF check reads the body): a 400
        raise error(f"{field}: {message}", field=field)

    def _drain(self) -> None:
        """Read the rest of the body, keeping nothing, so the client gets the answer (bounded in time)."""
        deadline = time.monotonic() + DRAIN_SECONDS
        while time.monotonic() < deadline:
            if not self._input.read(MB):
                return
