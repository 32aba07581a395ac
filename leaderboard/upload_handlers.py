"""Refuse an oversized multipart upload while it streams in, before it is written anywhere.

Django's parser writes every file of a request to disk before the view sees the first
one: 40 prediction files of 19 MB (725 MB) took 14.6 s to be refused by their count.
``BoundedUploadHandler`` runs first among ``FILE_UPLOAD_HANDLERS``: it counts the files
and the bytes of each against the limits in force for the request (the platform's
``MAX_PREDICTION_FILES``, ``MAX_PREDICTION_MB``, ``MAX_DATASET_MB``, ``MAX_RECIPE_KB`` and,
for a submission, the challenge's own k), and at the first file or byte over a limit it
drops what was stored, reads the rest of the body without keeping it (so the client
receives the answer), and raises ``UploadRefused``: a 400 naming the limit (issue 22).
"""

from __future__ import annotations

import time

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler
from django.http.multipartparser import MultiPartParserError
from django.urls import Resolver404, resolve

from .models import Challenge

MB = 1024 * 1024
DATASET_FIELDS = ("dataset", "test_dataset", "test_labels", "hidden_labels")
SUBMISSION_URL = "api-challenge-submissions"
DRAIN_SECONDS = 0.5  # past this, the connection is closed rather than the whole body read


class UploadRefused(MultiPartParserError):
    """An upload over a limit; DRF answers 400 "Multipart form parse error - <message>"."""


class BoundedUploadHandler(FileUploadHandler):
    """Counts files and bytes while the body streams; stores nothing itself."""

    def handle_raw_input(self, input_data, META, content_length, boundary, encoding=None):
        self._input = input_data
        self._files, self._field = 0, None
        k, self._on_submission = self._challenge_k()
        self._max_files, self._who = self._file_limit(k)
        if self._on_submission and content_length:
            self._check_request_size(content_length)
        return None  # the next handlers parse as usual

    def _check_request_size(self, content_length: int) -> None:
        """A submission can't be larger than its files at their limit (+1 MB of fields and headers)."""
        per_file = settings.VARBOARD["MAX_PREDICTION_MB"]
        most = self._max_files * per_file + 1
        if content_length > most * MB:
            self._refuse(f"the request is {content_length / MB:.1f} MB; a submission here takes at most "
                         f"{self._max_files} files of {per_file} MB ({most} MB with its fields).", "files")

    @staticmethod
    def _file_limit(k: int | None) -> tuple[int, str]:
        most = settings.VARBOARD["MAX_PREDICTION_FILES"]
        if k is not None and max(k, 1) < most:
            return max(k, 1), f"this challenge takes at most {max(k, 1)} (one per seed, k = {k})"
        return most, f"the limit is {most} files per submission"

    def _challenge_k(self) -> tuple[int | None, bool]:
        """(k of the challenge a submission is posted to, whether this is a submission): one indexed query."""
        if self.request is None:
            return None, False
        try:
            match = resolve(self.request.path_info)
        except Resolver404:
            return None, False
        if match.url_name != SUBMISSION_URL:
            return None, False
        slug = match.kwargs.get("slug")
        return Challenge.objects.filter(slug=slug).values_list("k_runs", flat=True).first(), True

    def _byte_limit(self, field_name: str) -> tuple[int, str] | None:
        limits = settings.VARBOARD
        if field_name in DATASET_FIELDS:
            return limits["MAX_DATASET_MB"] * MB, f"{limits['MAX_DATASET_MB']} MB"
        if field_name == "recipe":
            return limits["MAX_RECIPE_KB"] * 1024, f"{limits['MAX_RECIPE_KB']} KB"
        if field_name == "files" and self._on_submission:
            return limits["MAX_PREDICTION_MB"] * MB, f"{limits['MAX_PREDICTION_MB']} MB"
        return None

    def new_file(self, field_name, file_name, content_type, content_length, charset=None,
                 content_type_extra=None):
        super().new_file(field_name, file_name, content_type, content_length, charset, content_type_extra)
        self._size, self._field = 0, field_name
        self._limit = self._byte_limit(field_name)
        if field_name == "files":
            self._files += 1
            if self._files > self._max_files:
                self._refuse(f"more than {self._max_files} files were uploaded; {self._who}.", "files")
        if self._limit is not None and content_length is not None and content_length > self._limit[0]:
            self._refuse(self._too_large(content_length), field_name)

    def receive_data_chunk(self, raw_data, start):
        self._size += len(raw_data)
        if self._limit is not None and self._size > self._limit[0]:
            self._refuse(self._too_large(self._size, more=True), self._field)
        return raw_data

    def file_complete(self, file_size):
        return None

    def _too_large(self, size: int, more: bool = False) -> str:
        told = f"larger than {self._limit[1]}" if more else f"{size / MB:.1f} MB"
        return f"{self.file_name} is {told}; the limit is {self._limit[1]} per file."

    def _refuse(self, message: str, field: str):
        self._drain()
        raise UploadRefused(f"{field}: {message}")

    def _drain(self) -> None:
        """Read the rest of the body, keeping nothing, so the client gets the answer (bounded in time)."""
        deadline = time.monotonic() + DRAIN_SECONDS
        while time.monotonic() < deadline:
            if not self._input.read(MB):
                return
