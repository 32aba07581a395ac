"""Template context shared by every page."""

from __future__ import annotations

from ..selectors import invitations_pending_for


def invitations(request) -> dict:
    """``pending_invitations``: how many team invitations the user has not answered (the navigation's badge).

    A callable, which the template calls when it reads the variable: counted only then, and never for
    anonymous readers (no query, so the anonymous page cache stays query-free).
    """
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"pending_invitations": 0}
    return {"pending_invitations": lambda: invitations_pending_for(user=user).count()}
