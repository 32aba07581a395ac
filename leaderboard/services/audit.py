"""The audit log of host actions: who changed which setting or file of a challenge, when, from what to what.

Services write it in the same transaction as the change they record; the hosts read it on the
challenge's audit page and at ``GET /api/challenges/{slug}/audit/``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.contrib.auth.models import User

from ..models import AuditEntry, Challenge


def _plain(value: Any) -> Any:
    """A JSON-storable form of a setting's value (dates as ISO text)."""
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {key: _plain(v) for key, v in value.items()}
    return value


def audit_record(*, challenge: Challenge, actor: User | None, action: str, **details) -> AuditEntry:
    """Record one host action (``action`` such as ``settings_changed``, ``reveal``, ``rescore``)."""
    return AuditEntry.objects.create(
        challenge=challenge,
        actor=actor if getattr(actor, "pk", None) else None,
        action=action,
        details={k: _plain(v) for k, v in details.items()},
    )


def audit_changes(before: dict, after: dict) -> dict:
    """``{name: [old, new]}`` for every value that differs."""
    return {
        name: [_plain(before.get(name)), _plain(value)] for name, value in after.items() if before.get(name) != value
    }


def audit_save(
    instance,
    fields: dict,
    *,
    challenge: Challenge,
    actor: User | None,
    action: str,
    tracked: tuple[str, ...],
    **details,
) -> dict:
    """Set ``fields`` on ``instance``, save it, and record the changed ``tracked`` values; the changes."""
    before = {name: getattr(instance, name) for name in tracked}
    for name, value in fields.items():
        setattr(instance, name, value)
    instance.save()
    changes = audit_changes(before, fields)
    if changes:
        audit_record(challenge=challenge, actor=actor, action=action, changes=changes, **details)
    return changes
