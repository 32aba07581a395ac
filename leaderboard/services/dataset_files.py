"""Reading a challenge's stored dataset files (through Django's storage API).

The parts are CSV files written by ``services.challenges``: the public training rows, the
public test inputs and the hidden labels. Each part is parsed once per process and dataset
version (the version is a hash of the data, so a changed dataset is never served stale).
"""

from __future__ import annotations

import functools
import hashlib
import io

import numpy as np
import pandas as pd

from evaluation.preview import TablePreview, table_preview

from ..models import Dataset

PARTS = ("train", "test_inputs", "hidden_labels")


def _field(dataset: Dataset, part: str):
    if part not in PARTS:
        raise ValueError(f"unknown dataset part {part!r}; choose from {', '.join(PARTS)}")
    return {
        "train": dataset.train_file,
        "test_inputs": dataset.test_inputs_file,
        "hidden_labels": dataset.hidden_labels_file,
    }[part]


@functools.lru_cache(maxsize=32)
def _read_csv(field, version: str) -> pd.DataFrame:
    """``field`` (a FieldFile, hashed and compared by its stored name) parsed as text columns."""
    with field.open("rb") as handle:
        return pd.read_csv(io.BytesIO(handle.read()), dtype=str, keep_default_na=False)


def dataset_frame(*, dataset: Dataset, part: str) -> pd.DataFrame:
    """One stored part of a dataset (``train``, ``test_inputs`` or ``hidden_labels``) as strings."""
    field = _field(dataset, part)
    if not field:
        return pd.DataFrame()
    return _read_csv(field, dataset.version).copy()


@functools.lru_cache(maxsize=32)
def _read_ids(field, version: str, id_column: str) -> tuple[str, ...]:
    """The ``id_column`` of the stored part ``field``, read from the file as it streams: the other columns are
    never parsed (a public sample submission parsed every column of the test inputs as text in the web
    process, and kept them: +100 MB for a test set of 40 MB)."""
    with field.open("rb") as handle:
        frame = pd.read_csv(handle, usecols=[id_column], dtype=str, keep_default_na=False)
    return tuple(frame[id_column].tolist())


def dataset_test_ids(*, dataset: Dataset) -> list[str]:
    field = _field(dataset, "test_inputs")
    return list(_read_ids(field, dataset.version, dataset.id_column)) if field else []


def dataset_train_labels(*, dataset: Dataset) -> np.ndarray:
    """The public training rows' labels, as text in file order (the label column alone is read)."""
    field = _field(dataset, "train")
    return np.asarray(_read_ids(field, dataset.version, dataset.label_column) if field else (), dtype=str)


def dataset_version(*, dataset: Dataset, labels: bytes) -> str:
    """The version of ``dataset`` with the hidden labels ``labels`` (the stored CSV): the hash of its stored parts as
    the upload computed it, read a chunk at a time. (A label correction parsed the training rows and test inputs whole
    and wrote them out again as CSV in the web process, only to hash them: a 16 MB pair took +97 MB traced.)"""
    digest = hashlib.sha256()
    for field in (dataset.train_file, dataset.test_inputs_file):
        if field:
            with field.open("rb") as handle:
                while chunk := handle.read(1 << 20):
                    digest.update(chunk)
        digest.update(b"\0")
    digest.update(labels)
    return digest.hexdigest()


def dataset_hidden_labels(*, dataset: Dataset) -> np.ndarray:
    """Hidden test labels in test-input order. Callers: scoring only; never serialised."""
    ids = dataset_test_ids(dataset=dataset)
    hidden = dataset_frame(dataset=dataset, part="hidden_labels").set_index(dataset.id_column)
    labels = hidden.loc[ids, dataset.label_column].to_numpy()
    if dataset.task == "regression":
        return labels.astype(float)
    return labels.astype(str)


def dataset_preview(*, dataset: Dataset, rows: int = 5) -> TablePreview:
    """What the host checks before publishing: first rows, column types, class balance, test rows found.
    Reads the hidden labels: for the challenge's hosts only."""
    return _preview(dataset, dataset.version, rows)


@functools.lru_cache(maxsize=32)
def _preview(dataset: Dataset, version: str, rows: int) -> TablePreview:
    """The preview, kept per dataset version; the training rows it reads are not (parsed as text columns and kept in
    ``_read_csv``'s cache, a host's look at a 16 MB training file held +23 MB of the web process for good, up to 32
    datasets)."""
    hidden = dataset_frame(dataset=dataset, part="hidden_labels") if dataset.hidden_labels_file else None
    train = pd.DataFrame()
    if dataset.train_file:
        with dataset.train_file.open("rb") as handle:
            train = pd.read_csv(handle, dtype=str, keep_default_na=False)
    return table_preview(
        train,
        id_column=dataset.id_column,
        label_column=dataset.label_column,
        feature_columns=dataset.feature_columns,
        test_labels=hidden,
        classes=dataset.classes or (),
        rows=rows,
    )
