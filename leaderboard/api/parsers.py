"""The API's JSON parser: a body's arrays, objects and values counted before it is parsed.

DRF's JSONParser parses whatever the body holds, up to DATA_UPLOAD_MAX_MEMORY_SIZE (5 MB), and
parsed JSON takes many times its text in memory: 5 MB of ``[],`` took 135 MB of the web process
for one anonymous ``POST /api/auth/token/``. Every JSON body the API takes (settings, forms,
hyperparameters) holds dozens of tokens, so a body of more than ``limits.JSON_BODY_TOKENS`` is
refused unparsed, with a message that says why. Files travel as multipart uploads, which the
upload handlers bound (``leaderboard.upload_handlers``).
A body sent compressed (``Content-Encoding: gzip``) is not decompressed: it is refused (415) naming its
encoding, where it was a parse error about byte 0x8b.
"""

from __future__ import annotations

import io

from rest_framework.exceptions import ParseError, UnsupportedMediaType
from rest_framework.parsers import JSONParser

from ..limits import JSON_BODY_TOKENS, json_structure_count


class BoundedJSONParser(JSONParser):
    """:class:`rest_framework.parsers.JSONParser`, refusing a body of more than :data:`JSON_BODY_TOKENS`
    arrays, objects and values (``[``, ``{`` and ``,`` outside strings) before it is parsed."""

    def parse(self, stream, media_type=None, parser_context=None):
        request = (parser_context or {}).get("request")
        coding = request.META.get("HTTP_CONTENT_ENCODING", "").strip() if request is not None else ""
        if coding and coding.lower() != "identity":  # not decompressed here: say so, not "byte 0x8b" (gzip's magic)
            raise UnsupportedMediaType(
                media_type,
                detail=f"The request body is sent with Content-Encoding: {coding}; the API takes JSON bodies "
                "uncompressed (Content-Encoding identity).",
            )
        raw = stream.read() if stream is not None else b""  # DRF's copy of request.body: at most 5 MB
        text = raw
        encoding = (parser_context or {}).get("encoding") or "utf-8"
        if encoding.lower().replace("_", "-") not in ("utf-8", "utf8"):  # counted on UTF-8 bytes only
            try:
                text = raw.decode(encoding).encode("utf-8")
            except (LookupError, UnicodeError) as exc:
                raise ParseError(f"JSON parse error - the body is not {encoding} text: {exc}") from None
        if json_structure_count(text, b"[{,", JSON_BODY_TOKENS) > JSON_BODY_TOKENS:
            raise ParseError(
                f"The JSON body holds more than {JSON_BODY_TOKENS:,} arrays, objects and values; the API "
                f"takes at most {JSON_BODY_TOKENS:,} in one body (files go as multipart uploads)."
            )
        try:
            return super().parse(io.BytesIO(raw), media_type, parser_context)
        except RecursionError:  # e.g. 50,000 nested arrays: few tokens, but deeper than json's recursion
            raise ParseError("JSON parse error - the body nests its arrays and objects too deeply.") from None
