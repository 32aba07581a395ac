"""CSV output for list endpoints (``?format=csv``)."""

import csv
import io
import json

from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer

from ..services.errors import NotFound


class CSVRenderer(BaseRenderer):
    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def stream(self, rows):
        """The CSV of ``rows`` line by line (header first), for a ``StreamingHttpResponse``."""
        columns: list[str] = []
        for row in rows:
            columns.extend(key for key in self._flatten(row) if key not in columns)
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({key: self._safe(value) for key, value in self._flatten(row).items()})
            if buffer.tell() > 1 << 16:
                yield buffer.getvalue().encode(self.charset)
                buffer.seek(0)
                buffer.truncate()
        yield buffer.getvalue().encode(self.charset)

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if isinstance(data, dict) and "results" in data:
            data = data["results"]
        if isinstance(data, dict) and "entries" in data:
            data = data["entries"]
        if isinstance(data, dict):
            data = [data]
        rows = [self._flatten(row) for row in data or []]
        columns: list[str] = []
        for row in rows:
            columns.extend(key for key in row if key not in columns)
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows([{key: self._safe(value) for key, value in row.items()} for row in rows])
        return buffer.getvalue().encode(self.charset)

    @staticmethod
    def _safe(value):
        """Neutralise spreadsheet formulas in text cells (method and team names are user input)."""
        if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
            try:
                float(value)
                return value  # a plain negative number stays a number
            except ValueError:
                return "'" + value
        return value

    @classmethod
    def _flatten(cls, row: dict, prefix: str = "") -> dict:
        flat = {}
        for key, value in row.items():
            name = f"{prefix}{key}"
            if isinstance(value, dict):
                flat.update(cls._flatten(value, prefix=f"{name}."))
            elif isinstance(value, list):
                flat[name] = json.dumps(value)
            else:
                flat[name] = value
        return flat


class NamedFormatNegotiation(DefaultContentNegotiation):
    """DRF's negotiation, whose 404 for a ``?format=`` the endpoint does not answer names the parameter and the
    formats it does answer (a host's review: ``?format=xml`` was a bare "Not found.")."""

    def filter_renderers(self, renderers, format):
        kept = [renderer for renderer in renderers if renderer.format == format]
        if not kept:
            formats = ", ".join(dict.fromkeys(renderer.format for renderer in renderers))
            raise NotFound(f"`format` {format!r} is not answered here; the formats are: {formats}.", field="format")
        return kept
