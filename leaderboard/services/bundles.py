"""Challenge bundles: one archive that moves a challenge to another server, or clones it (Codabench's
competition bundle, in varboard's terms).

A bundle is a zip file holding ``manifest.json`` and the dataset's three stored parts::

    manifest.json            {"format": "varboard-bundle", "version": 1, "challenge": {...settings...},
                              "phases": [{...}, ...], "dataset": {...}, "pages": {"description", "rules"}}
    data/train.csv           the training rows with their labels
    data/test_inputs.csv     the test rows' inputs
    data/hidden_labels.csv   the test rows' labels (id and label columns)
    scoring/scoring.py       the host's scoring program, where the challenge has one

``scoring_program`` (absent without one) is ``{"file": "scoring/scoring.py", "metrics": [...]}``, the
metrics it declared; the imported challenge gets the program and its metrics, and checks it again on
its own sample submission (status ``checking``, then ``ok`` or ``failed``). It is created private: its
hosts publish it once the check has passed.

``challenge`` holds every setting of :data:`~leaderboard.services.challenges.CHALLENGE_FIELDS` (the
pages excepted), ``phases`` each phase's :data:`~leaderboard.services.phases.PHASE_FIELDS` (dates in ISO
8601, UTC) in order, and ``dataset`` its columns and ``public_ids``: the ids of the test rows on the
public board, so that the re-created challenge splits its hidden rows exactly as the original did
(the draw itself uses a server-side salt). Submissions, runs, teams and the audit log are not part of
a bundle: it moves the challenge, not its contestants. Exporting reads the hidden labels: hosts only,
and each export is audit-logged.
"""

from __future__ import annotations

import io
import json
import tempfile
import zipfile
import zlib
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

import numpy as np
from django.contrib.auth.models import User

from evaluation.boards import pack_mask

from ..choices import Visibility
from ..limits import MANIFEST_CONTAINERS, json_structure_count, upload_limit
from ..models import Challenge
from ..selectors import user_is_host
from ..storage import atomic_deleting_on_failure, delete_stored
from .audit import audit_record
from .boards import board_public_mask
from .challenges import CHALLENGE_FIELDS, DatasetUpload, challenge_create
from .dataset_files import dataset_test_ids
from .errors import NotAllowed, ServiceError, TooLarge
from .phases import PHASE_FIELDS, phase_create, phase_update
from .programs import program_restore
from .workdirs import work_folder

BUNDLE_FORMAT, BUNDLE_VERSION = "varboard-bundle", 1
PARTS = {"train": "data/train.csv", "test_inputs": "data/test_inputs.csv", "hidden_labels": "data/hidden_labels.csv"}
PAGES = ("description", "rules")
_DATES = ("opens_at", "closes_at")
PROGRAM_FILE = "scoring/scoring.py"
#: A bundle holds the manifest, three data parts and a scoring program; room for a few more.
MAX_BUNDLE_MEMBERS = 64
#: Bytes of a bundle's zip directory: 46 bytes and a name (and extras) per file.
MAX_BUNDLE_DIRECTORY = MAX_BUNDLE_MEMBERS * 1024


def _program_manifest(challenge: Challenge) -> dict:
    if not challenge.scoring_program:
        return {}
    return {"scoring_program": {"file": PROGRAM_FILE, "metrics": list(challenge.program_metrics or [])}}


def bundle_export(*, challenge: Challenge, user: User) -> bytes:
    """The challenge as a bundle (zip bytes); hosts only, audit-logged. The web views stream
    :func:`bundle_export_file` instead."""
    with bundle_export_file(challenge=challenge, user=user) as archive:
        return archive.read()


def bundle_export_file(*, challenge: Challenge, user: User) -> BinaryIO:
    """The challenge as a bundle: a zip file (an unnamed temporary file) at its start; hosts only, audit-logged.

    The stored parts are copied into the archive a chunk at a time, and only the test ids are parsed (for the public
    rows): the export parsed every part as text columns, wrote each out again as CSV and built the zip in memory (and
    the parsed parts stayed in the process's cache), about +49 MB traced in the web process for two parts of 16 MB.
    """
    if not user_is_host(user=user, challenge=challenge):
        raise NotAllowed("Only the challenge's hosts can export it: a bundle holds the hidden labels.")
    dataset = getattr(challenge, "dataset", None)
    if dataset is None:
        raise ServiceError(
            "This challenge has no dataset (its entries are imported results): there is nothing to "
            "bundle but its settings.",
            field="challenge",
        )
    out = tempfile.TemporaryFile()  # noqa: SIM115 - handed to the caller, closed by the response
    try:
        _write_bundle(out, challenge, dataset)
        audit_record(challenge=challenge, actor=user, action="bundle_exported", parts=sorted(PARTS))
    except BaseException:  # the file closed at once, the audit's failure included (leaks9)
        out.close()
        raise
    out.seek(0)
    return out


def _write_bundle(out: BinaryIO, challenge: Challenge, dataset) -> None:
    test_ids = dataset_test_ids(dataset=dataset)
    public = board_public_mask(dataset=dataset)
    manifest = {
        "format": BUNDLE_FORMAT,
        "version": BUNDLE_VERSION,
        "slug": challenge.slug,
        "challenge": {name: getattr(challenge, name) for name in CHALLENGE_FIELDS if name not in PAGES},
        "pages": {name: getattr(challenge, name) for name in PAGES},
        "phases": [
            {name: _plain(getattr(phase, name)) for name in PHASE_FIELDS}
            for phase in challenge.phases.order_by("order", "id")
        ],
        **_program_manifest(challenge),
        "dataset": {
            "id_column": dataset.id_column,
            "label_column": dataset.label_column,
            "feature_columns": list(dataset.feature_columns),
            "original_name": dataset.original_name,
            "version": dataset.version,
            "public_ids": None if dataset.public_mask is None else [i for i, shown in zip(test_ids, public) if shown],
            "files": PARTS,
        },
    }
    fields = {
        "train": dataset.train_file,
        "test_inputs": dataset.test_inputs_file,
        "hidden_labels": dataset.hidden_labels_file,
    }
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("manifest.json", json.dumps(manifest, indent=1, sort_keys=True))
        for part, name in PARTS.items():
            _copy_into(archive, name, fields[part])
        if challenge.scoring_program:
            _copy_into(archive, PROGRAM_FILE, challenge.scoring_program)


def _copy_into(archive: zipfile.ZipFile, name: str, field) -> None:
    """The stored file ``field`` as the member ``name``, a megabyte at a time (an empty member where none is stored)."""
    with archive.open(name, "w") as member:
        if not field:
            return
        with field.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                member.write(chunk)


def bundle_import(
    *, data: bytes | BinaryIO, user: User, slug: str | None = None, title: str | None = None
) -> Challenge:
    """A new challenge from a bundle, hosted by ``user``: its settings, pages, phases, dataset and public rows.

    ``data``: the bundle's bytes, or a seekable binary file (an upload, as Django spooled it): read from the file,
    the zip's directory and members are read where they lie, never the whole bundle into the web process (a
    190 MB bundle raised a web worker's peak memory from 237 to 427 MB when the views read it whole first: a
    reviewer's fault injection, tests/integration/test_faults_v3.py).

    All or nothing: a bundle refused at any step (its manifest, a setting, a phase, the data) leaves no
    challenge behind. The message names the member or the field.
    """
    source = io.BytesIO(data) if isinstance(data, (bytes, bytearray, memoryview)) else data
    with work_folder("bundle") as folder:
        manifest, parts = _read(source, Path(folder))
        program = _read_program(source, manifest)
        return _create_from(manifest, parts, program, user=user, slug=slug, title=title)


def _create_from(
    manifest: dict,
    parts: dict[str, Path],
    program: tuple[bytes, list] | None,
    *,
    user: User,
    slug: str | None,
    title: str | None,
):
    """``bundle_import``'s creation, from the manifest, the data parts unpacked to files and the program."""
    settings = dict(manifest["challenge"]) | {name: manifest.get("pages", {}).get(name, "") for name in PAGES}
    if program is not None:
        settings["higher_is_better"] = None  # the program's primary gives it (program_restore)
        settings["visibility"] = Visibility.PRIVATE  # published by its hosts once the program passed its check
    if title:
        settings["title"] = title
    unknown = sorted(set(settings) - set(CHALLENGE_FIELDS))
    if unknown:
        raise ServiceError(f"manifest.json: unknown challenge settings {unknown}.", field="bundle")
    columns = manifest["dataset"]
    upload = DatasetUpload(
        data=parts["train"],
        filename="train.csv",
        id_column=columns["id_column"],
        label_column=columns["label_column"],
        test_data=parts["test_inputs"],
        test_filename="test_inputs.csv",
        feature_columns=tuple(columns["feature_columns"]),
        test_labels_data=parts["hidden_labels"],
        test_labels_filename="hidden_labels.csv",
    )
    challenge = None

    def delete_files() -> None:  # the rows are rolled back; the stored files go too
        if challenge is None:
            return
        for part in ("train_file", "test_inputs_file", "hidden_labels_file"):
            field = getattr(challenge.dataset, part)
            if field:
                delete_stored(field)
        if challenge.scoring_program:
            delete_stored(challenge.scoring_program)

    def stored() -> bool:  # asked when the COMMIT itself answered an error: it may be stored all the same
        return challenge is not None and Challenge.objects.filter(pk=challenge.pk).exists()

    with atomic_deleting_on_failure(delete_files, stored):
        challenge = challenge_create(created_by=user, dataset=upload, slug=slug or manifest.get("slug"), **settings)
        _restore_public_rows(challenge, columns.get("public_ids"))
        _restore_phases(challenge, manifest.get("phases") or [], user)
        if program is not None:
            program_restore(challenge=challenge, user=user, data=program[0], metrics=program[1])
        audit_record(
            challenge=challenge,
            actor=user,
            action="bundle_imported",
            source=manifest.get("slug"),
            version=columns.get("version"),
        )
    return challenge


def _read(source: BinaryIO, folder: Path) -> tuple[dict, dict[str, Path]]:
    """The manifest, and each data part unpacked into ``folder`` while it is counted (``_unpack``)."""
    limit = upload_limit("bundle")
    size = source.seek(0, io.SEEK_END)
    if limit.exceeded_by(size):
        raise TooLarge(f"The bundle is {limit.size(size)}; the limit is {limit.label}.", field="bundle")
    _check_directory(source, size)
    try:
        archive = zipfile.ZipFile(source)
    except zipfile.BadZipFile:
        raise ServiceError("The bundle is not a zip file.", field="bundle") from None
    with archive:
        if len(archive.infolist()) > MAX_BUNDLE_MEMBERS:  # counted again: the end record's counts may lie
            raise ServiceError(
                f"The bundle holds {len(archive.infolist()):,} files; a bundle holds at most {MAX_BUNDLE_MEMBERS} files.",
                field="bundle",
            )
        names = set(archive.namelist())
        missing = sorted({"manifest.json", *PARTS.values()} - names)
        if missing:
            raise ServiceError(f"The bundle lacks {', '.join(missing)}.", field="bundle")
        for info in archive.infolist():
            if limit.exceeded_by(info.file_size):
                raise TooLarge(
                    f"{info.filename} unpacks to {limit.size(info.file_size)}; the limit is {limit.label}.",
                    field="bundle",
                )
        try:
            manifest = json.loads(_bounded_manifest(_unpack(archive, "manifest.json", folder, "manifest").read_bytes()))
        except ValueError as exc:
            raise ServiceError(f"manifest.json is not JSON: {exc}.", field="bundle") from None
        if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE_FORMAT:
            raise ServiceError(f"manifest.json: `format` must be {BUNDLE_FORMAT!r}.", field="bundle")
        if manifest.get("version") != BUNDLE_VERSION:
            raise ServiceError(
                f"manifest.json: bundle version {manifest.get('version')!r}; this server reads "
                f"version {BUNDLE_VERSION}.",
                field="bundle",
            )
        _check_shape(manifest)
        return manifest, {part: _unpack(archive, name, folder) for part, name in PARTS.items()}


def _check_shape(manifest: dict) -> None:
    """Refuse a manifest whose keys do not hold what the import reads from them, naming the key: a missing
    ``dataset.id_column``, ``phases`` of 5 or ``pages`` of a list were a 500 (KeyError, TypeError), and phases of
    strings were imported as no phases at all. The values themselves are checked where the API checks them."""

    def refuse(key: str, what: str) -> ServiceError:
        return ServiceError(f"manifest.json: `{key}` must be {what}.", field="bundle")

    for key in ("challenge", "dataset"):
        if not isinstance(manifest.get(key), dict):
            raise refuse(key, "an object")
    dataset = manifest["dataset"]
    for key in ("id_column", "label_column"):
        if not isinstance(dataset.get(key), str) or not dataset[key]:
            raise refuse(f"dataset.{key}", "a column name (a text)")
    columns = dataset.get("feature_columns")
    if not isinstance(columns, list) or not all(isinstance(name, str) for name in columns):
        raise refuse("dataset.feature_columns", "a list of column names")
    public = dataset.get("public_ids")
    if public is not None and not (
        isinstance(public, list) and all(isinstance(i, (str, int)) and not isinstance(i, bool) for i in public)
    ):
        raise refuse("dataset.public_ids", "a list of test row ids, or null")
    phases = manifest.get("phases")
    if phases is not None and not (isinstance(phases, list) and all(isinstance(p, dict) for p in phases)):
        raise refuse("phases", "a list of objects, one per phase")
    pages = manifest.get("pages", {})
    if not isinstance(pages, dict) or not all(isinstance(pages.get(name, ""), str) for name in PAGES):
        raise refuse("pages", f"an object of texts ({', '.join(PAGES)})")
    if manifest.get("slug") is not None and not isinstance(manifest["slug"], str):
        raise refuse("slug", "a text, or null")


_LIMIT_NAMES = {"dataset": "a dataset's limit", "manifest": "a bundle manifest's limit"}


#: The end of a zip that holds its end record: the record (22 bytes), a comment of up to 64 KB, and the 20 bytes of a
#: ZIP64 locator before the record.
_END_BYTES = 22 + 0xFFFF + 20


def _check_directory(source: BinaryIO, size: int) -> None:
    """Refuse a zip whose central directory is larger than a bundle's, from its end record, before
    ``zipfile`` builds one object per entry (177,000 empty entries in 14 MB took +100 MB). ``zipfile``
    reads entries until it has covered the directory's declared size, whatever count the record gives,
    so the size is bounded, as is the count; a ZIP64 archive (its locator before the record) is refused.
    Without an end record nothing is checked here: ``zipfile`` then says the file is not a zip. Only the
    bundle's last :data:`_END_BYTES` are read."""
    source.seek(max(0, size - _END_BYTES))
    data = source.read(_END_BYTES)
    at = data.rfind(b"PK\x05\x06", max(0, len(data) - 22 - 0xFFFF))  # the record, then a comment of up to 64 KB
    if at < 0 or at + 22 > len(data):
        return
    members = int.from_bytes(data[at + 10 : at + 12], "little")
    size = int.from_bytes(data[at + 12 : at + 16], "little")
    zip64 = at >= 20 and data[at - 20 : at - 16] == b"PK\x06\x07"
    if zip64 or members > MAX_BUNDLE_MEMBERS or size > MAX_BUNDLE_DIRECTORY:
        raise ServiceError(
            f"The bundle holds {'a ZIP64 directory' if zip64 else f'{members:,} files ({size:,} bytes of directory)'}; "
            f"a bundle holds at most {MAX_BUNDLE_MEMBERS} files.",
            field="bundle",
        )


def _unpack(archive: zipfile.ZipFile, name: str, folder: Path, kind: str = "dataset") -> Path:
    """One member written to ``folder`` a megabyte at a time and refused past the limit of ``kind``
    (``upload_limit``: a dataset's for the data parts), whatever its header declares. A data part is
    then parsed only by the child that prepares the challenge, so a small zip that unpacks to gigabytes
    never reaches the web process's memory (a bundle's parts were read into it whole, up to 200 MB each)."""
    limit = upload_limit(kind)
    target, written = folder / name.replace("/", "_"), 0
    try:
        with archive.open(name) as source, open(target, "wb") as out:
            while chunk := source.read(1024 * 1024):
                written += len(chunk)
                if limit.exceeded_by(written):
                    raise TooLarge(f"{name} unpacks to more than {limit.label}, {_LIMIT_NAMES[kind]}.", field="bundle")
                out.write(chunk)
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:  # a damaged member (its CRC, its stream)
        raise ServiceError(f"{name} is damaged in the bundle: {exc}.", field="bundle") from None
    return target


def _bounded_manifest(text: bytes) -> bytes:
    """``text`` if its arrays and objects (counted outside its strings) are at most
    :data:`~leaderboard.limits.MANIFEST_CONTAINERS`: each becomes a Python object once parsed, so a
    few megabytes of ``[],`` would take hundreds of megabytes of the web process's memory."""
    try:  # json.loads would take UTF-16 or UTF-32 too, where the count below would read the escapes wrong
        text.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ServiceError(f"manifest.json is not UTF-8 text (byte {exc.start}).", field="bundle") from None
    if json_structure_count(text, b"[{", MANIFEST_CONTAINERS) > MANIFEST_CONTAINERS:
        raise ServiceError(
            f"manifest.json holds more than {MANIFEST_CONTAINERS:,} arrays and objects; a bundle's manifest may "
            f"hold {MANIFEST_CONTAINERS:,}.",
            field="bundle",
        )
    return text


def _read_program(source: BinaryIO, manifest: dict) -> tuple[bytes, list] | None:
    """The bundle's scoring program and its declared metrics, or None without one."""
    entry = manifest.get("scoring_program")
    if entry is None:
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("metrics"), list):
        raise ServiceError("manifest.json: `scoring_program` must be {file, metrics: [...]}.", field="bundle")
    limit = upload_limit("program")
    with zipfile.ZipFile(source) as archive:
        if PROGRAM_FILE not in archive.namelist():
            raise ServiceError(f"The bundle lacks {PROGRAM_FILE}, which its manifest names.", field="bundle")
        try:
            with archive.open(PROGRAM_FILE) as member:  # read up to the limit, whatever the header declares
                program = member.read(limit.max_bytes + 1)
        except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
            raise ServiceError(f"{PROGRAM_FILE} is damaged in the bundle: {exc}.", field="bundle") from None
    if limit.exceeded_by(len(program)):
        raise TooLarge(f"{PROGRAM_FILE} is larger than {limit.label}, a scoring program's limit.", field="bundle")
    return program, entry["metrics"]


def _restore_public_rows(challenge: Challenge, public_ids) -> None:
    """The original's public rows, by id, in the new challenge's test order."""
    if public_ids is None:
        return
    dataset = challenge.dataset
    if dataset.public_mask is None:
        raise ServiceError(
            "manifest.json lists public test rows, but the settings give the challenge no private "
            "board (public_fraction).",
            field="bundle",
        )
    ids = np.asarray(dataset_test_ids(dataset=dataset), dtype=object)  # the id column only, not the whole table
    wanted = {str(i) for i in public_ids}
    unknown = wanted - set(ids)
    if unknown:
        raise ServiceError(
            f"manifest.json: public test rows {sorted(unknown)[:5]} are not among the test rows.", field="bundle"
        )
    mask = pack_mask(np.isin(ids, list(wanted)))
    type(dataset).objects.filter(pk=dataset.pk).update(public_mask=mask)
    dataset.public_mask = mask


def _restore_phases(challenge: Challenge, phases: list[dict], user: User) -> None:
    """The first phase replaces the default one; the others are added after it, in order.

    Automatic reveals are set once every phase exists: a closed revealing phase restored before the phases after
    it read as a revealed board, which refused them (a challenge exported between its phases)."""
    revealing = []
    for i, fields in enumerate(phases):
        values = {
            name: _date(fields[name]) if name in _DATES else fields[name] for name in PHASE_FIELDS if name in fields
        }
        reveal = values.pop("auto_reveal", False)
        if i == 0:
            phase = phase_update(phase=challenge.phases.get(), user=user, **values)
        else:
            phase = phase_create(challenge=challenge, user=user, **values)
        if reveal:
            revealing.append(phase)
    for phase in revealing:
        phase_update(phase=phase, user=user, auto_reveal=True)


def _plain(value):
    return value.isoformat() if isinstance(value, datetime) else value


def _date(value):
    if value is None or isinstance(value, datetime):
        return value
    try:
        return datetime.fromisoformat(value)
    except (TypeError, ValueError):
        raise ServiceError(f"manifest.json: {value!r} is not an ISO 8601 date.", field="bundle") from None
