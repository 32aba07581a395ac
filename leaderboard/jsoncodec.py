"""The stored reports' JSON codec: orjson behind the ``json`` encoder/decoder hooks of ``JSONField``.

A 5,000-entry report is ~20 MB of JSON, written at each update: the standard ``json`` module
encodes it in ~0.2 s, orjson in ~0.04 s (decoding: about the same; docs/scale.md,
"Incremental updates"). The values are the same: key order kept, floats written as their shortest
round-trip form (as ``repr``), non-string keys written as strings (as ``json``). What orjson
refuses falls back to ``json``: encoding an integer beyond 64 bits, decoding ``NaN`` or
``Infinity`` tokens. Two differences, neither reachable from a report: orjson writes NaN as
``null`` (reports hold none: ``evaluation.report.values`` maps them to None, and PostgreSQL's
jsonb rejects them anyway) and decodes an integer beyond 64 bits as a float (a report's
integers are ids, counts and seeds, under 2**63).
"""

from __future__ import annotations

import json

import orjson


class FastJSONEncoder(json.JSONEncoder):
    """``json.dumps(value, cls=FastJSONEncoder)``: orjson's output, ``json``'s when orjson cannot."""

    def encode(self, o) -> str:
        if self.indent is None and not self.sort_keys:
            try:
                return orjson.dumps(o, option=orjson.OPT_NON_STR_KEYS).decode()
            except TypeError:  # orjson.JSONEncodeError: e.g. an integer beyond 64 bits
                pass
        return super().encode(o)


class FastJSONDecoder(json.JSONDecoder):
    """``json.loads(text, cls=FastJSONDecoder)``: orjson's parse, ``json``'s when orjson refuses the text."""

    def decode(self, s, *args):
        try:
            return orjson.loads(s)
        except orjson.JSONDecodeError:  # e.g. a NaN token, which json accepts
            return super().decode(s, *args)
