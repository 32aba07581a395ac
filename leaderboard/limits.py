"""Every upload's size limit, decided in one place (issue 24: one ``upload_limit(kind)`` for every upload).

The streaming handler (``upload_handlers``), the readers (``uploads``), the services that parse or check
an uploaded file (datasets, label corrections, prediction files, recipes, bundles, result imports) and the
children they start all ask :func:`upload_limit`; the ``VARBOARD["MAX_*"]`` sizes are read nowhere else.
Before, the same recipe was refused at 512 KB while it streamed and at 1 MB when read, and a results
import took 20 MB files through the API and 50 MB ones through the web form.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.conf import settings

KB, MB = 1024, 1024 * 1024
#: A bundle (a challenge's settings, pages, phases, data and public rows as one zip) and each file in it.
BUNDLE_MB = 200
#: A bundle's manifest.json (settings, pages, phases, the public rows' ids: about a million short ids fit),
#: and the arrays and objects it may hold (a bundle's has a few dozen). Parsed JSON takes many times its
#: text in memory (94 MB of ``[],`` took 2.3 GB), so the manifest is bounded before it is parsed.
MANIFEST_MB = 8
MANIFEST_CONTAINERS = 10_000
#: Arrays, objects and values (``[``, ``{`` and ``,`` outside strings) one JSON body of the API may hold: its
#: settings and forms hold dozens, and the largest hyperparameters (64 KB) at most 65,536. The body's size is
#: DATA_UPLOAD_MAX_MEMORY_SIZE's (5 MB), but 5 MB of ``[],`` parsed took 135 MB of the web process, for anyone,
#: before any log-in; at this bound a body parses to a few megabytes (``api.parsers``).
JSON_BODY_TOKENS = 100_000
#: A recipe submission's fixed hyperparameters as JSON text: a few values, stored with every submission
#: and read back with each list of them (5 MB of JSON took about 130 MB per row once parsed).
HYPERPARAMETERS_KB = 64
#: A host's scoring program: ``execution.scoring_program.MAX_PROGRAM_BYTES``, which the web side cannot import.
PROGRAM_KB = 1000

#: kind -> (the setting, its unit). ``dataset``: a host's table (the dataset, its test rows or labels, a
#: label correction); ``dataset_decoded``: the same once decompressed (Parquet); ``prediction``: one
#: prediction file, or one file of a results import; ``recipe``: one recipe; ``bundle``: a bundle and each file in
#: it; ``manifest``: a bundle's manifest.json; ``program``: a host's scoring program; ``hyperparameters``: a
#: recipe submission's hyperparameters as JSON text.
_SETTINGS = {
    "dataset": ("MAX_DATASET_MB", MB),
    "dataset_decoded": ("MAX_DATASET_DECODED_MB", MB),
    "prediction": ("MAX_PREDICTION_MB", MB),
    "recipe": ("MAX_RECIPE_KB", KB),
}
KINDS = (*_SETTINGS, "bundle", "manifest", "program", "hyperparameters")


@dataclass(frozen=True)
class UploadLimit:
    """The most bytes one file of a kind may hold, and how messages name it ("100 MB", "512 KB")."""

    kind: str
    max_bytes: int
    unit: int

    @property
    def label(self) -> str:
        return f"{self.max_bytes // self.unit} {'KB' if self.unit == KB else 'MB'}"

    def size(self, size: int) -> str:
        """``size`` bytes in this limit's unit, as messages show it: "1.5 MB", "600 KB"."""
        return f"{size / KB:.0f} KB" if self.unit == KB else f"{size / MB:.1f} MB"

    def exceeded_by(self, size: int | None) -> bool:
        return size is not None and size > self.max_bytes


def upload_limit(kind: str) -> UploadLimit:
    """The limit in force for one uploaded file of ``kind`` (one of :data:`KINDS`)."""
    if kind == "bundle":
        return UploadLimit(kind, BUNDLE_MB * MB, MB)
    if kind == "manifest":
        return UploadLimit(kind, MANIFEST_MB * MB, MB)
    if kind == "hyperparameters":
        return UploadLimit(kind, HYPERPARAMETERS_KB * KB, KB)
    if kind == "program":
        return UploadLimit(kind, PROGRAM_KB * KB, KB)
    if kind not in _SETTINGS:
        raise ValueError(f"no upload limit for {kind!r}; the kinds are {', '.join(KINDS)}")
    setting, unit = _SETTINGS[kind]
    return UploadLimit(kind, settings.VARBOARD[setting] * unit, unit)


def upload_file_count_limit() -> int:
    """The most files one submission (or one results import) may upload."""
    return settings.VARBOARD["MAX_PREDICTION_FILES"]


def upload_child_limits() -> dict:
    """``run_guarded``'s allowance for the forked child that parses an upload (a dataset, prediction files,
    a results import, a label correction, a recipe's declarations): ``memory_limit`` bytes
    (``DATASET_PARSE_MB``) and ``timeout`` seconds (``UPLOAD_CHECK_S``)."""
    limits = settings.VARBOARD
    return {"memory_limit": limits["DATASET_PARSE_MB"] * MB, "timeout": limits["UPLOAD_CHECK_S"]}


# a string (or an unterminated one, to the end, a last lone backslash included: a match from a quote never
# fails, so nothing is rescanned from each quote, which made ``\"`` repeated then ``\`` quadratic), or one
# structural byte
_STRING_OR_STRUCTURE = re.compile(rb'"(?:[^"\\]|\\.)*(?:"|\\?\Z)|[\[{,]', re.DOTALL)


def json_structure_count(text: bytes, chars: bytes, limit: int) -> int:
    """Whether the UTF-8 JSON ``text`` holds more than ``limit`` of ``chars`` (bytes among ``[{,``) outside its
    strings: a number above ``limit`` if so (the count stops at the first one beyond it), else one at most
    ``limit`` (an upper bound: when the bytes themselves are few, those in strings are counted too). Linear,
    no copy of the text.

    Parsed JSON takes many times its text in memory, one Python object per array, object or value, so
    what may be parsed is bounded by this count first (a manifest's containers, an API body's tokens).
    """
    bound = sum(text.count(bytes([c])) for c in chars)  # an upper bound: those in strings counted too
    if bound <= limit:
        return bound
    count = 0
    for token in _STRING_OR_STRUCTURE.finditer(text):
        if token.end() - token.start() == 1 and text[token.start()] in chars:
            count += 1
            if count > limit:
                break
    return count
