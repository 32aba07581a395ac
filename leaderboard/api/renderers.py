"""CSV output for list endpoints (``?format=csv``)."""

import csv
import io
import json

from rest_framework.renderers import BaseRenderer


class CSVRenderer(BaseRenderer):
    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

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
        writer.writerows(rows)
        return buffer.getvalue().encode(self.charset)

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
