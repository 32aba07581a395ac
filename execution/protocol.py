"""The wire format between a worker and a runner service: one zip archive each way.

Request (``POST /v1/runs``): ``manifest.json`` (limits, device, expected outputs with their
size caps) and the workspace's files under ``files/``. Response: ``result.json`` (the
``SandboxResult`` and the faults of unacceptable outputs) and the outputs under
``outputs/``. Zip (stored, not compressed: the arrays are already dense) keeps the format
inspectable with standard tools and free of pickle.
"""

from __future__ import annotations

import dataclasses
import io
import json
import zipfile

from .sandbox import Limits, SandboxResult

__all__ = ["ProtocolError", "decode_request", "decode_response", "encode_request", "encode_response"]


class ProtocolError(ValueError):
    """A request or response that is not in the runner protocol's format (the message says how)."""


def _archive(entries: dict) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, content in entries.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def _open(data: bytes, max_bytes: int) -> zipfile.ZipFile:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as exc:
        raise ProtocolError(f"the body is not a zip archive ({exc})") from None
    total = sum(info.file_size for info in archive.infolist())
    if total > max_bytes:
        raise ProtocolError(f"the archive holds {total:,} bytes, more than the {max_bytes:,}-byte limit")
    return archive


def _json(archive: zipfile.ZipFile, name: str) -> dict:
    try:
        value = json.loads(archive.read(name))
    except KeyError:
        raise ProtocolError(f"the archive has no {name}") from None
    except ValueError as exc:
        raise ProtocolError(f"{name} is not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ProtocolError(f"{name} must hold a JSON object")
    return value


def encode_request(files: dict, expected_outputs: dict, limits: Limits, device: str) -> bytes:
    manifest = {"limits": dataclasses.asdict(limits), "device": device, "expected_outputs": expected_outputs}
    return _archive({"manifest.json": json.dumps(manifest), **{f"files/{name}": data for name, data in files.items()}})


def decode_request(data: bytes, max_bytes: int) -> tuple[dict, dict, Limits, str]:
    """(files, expected outputs, limits, device) of a request; ProtocolError when malformed."""
    archive = _open(data, max_bytes)
    manifest = _json(archive, "manifest.json")
    try:
        limits = Limits(**manifest["limits"])
        device, expected = str(manifest["device"]), {str(k): int(v) for k, v in manifest["expected_outputs"].items()}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ProtocolError(f"manifest.json is incomplete or invalid ({exc})") from None
    files = {
        info.filename[len("files/") :]: archive.read(info)
        for info in archive.infolist()
        if info.filename.startswith("files/") and not info.is_dir()
    }
    return files, expected, limits, device


def encode_response(result: SandboxResult, outputs: dict, faults: dict) -> bytes:
    payload = {"sandbox": dataclasses.asdict(result), "faults": faults}
    return _archive({"result.json": json.dumps(payload), **{f"outputs/{n}": d for n, d in outputs.items()}})


def decode_response(data: bytes, max_bytes: int) -> tuple[SandboxResult, dict, dict]:
    """(sandbox result, outputs, faults) of a response; ProtocolError when malformed."""
    archive = _open(data, max_bytes)
    payload = _json(archive, "result.json")
    try:
        fields = payload["sandbox"]
        result = SandboxResult(
            **{**fields, "isolation": tuple(fields.get("isolation", ())), "warnings": tuple(fields.get("warnings", ()))}
        )
        faults = {str(k): str(v) for k, v in payload.get("faults", {}).items()}
    except (KeyError, TypeError, AttributeError) as exc:
        raise ProtocolError(f"result.json is incomplete or invalid ({exc})") from None
    outputs = {
        info.filename[len("outputs/") :]: archive.read(info)
        for info in archive.infolist()
        if info.filename.startswith("outputs/") and not info.is_dir()
    }
    return result, outputs, faults
