"""Report recomputations are coalesced: a burst of finished runs queues one recomputation."""

import pytest

from leaderboard.models import Report
from leaderboard.services.reports import report_recompute, report_request

from .factories import digits_challenge, make_user

pytestmark = pytest.mark.django_db


def test_fifty_requests_queue_one_recomputation_and_a_late_one_queues_one_more(
    monkeypatch, django_capture_on_commit_callbacks
):
    challenge, _ = digits_challenge(make_user("host"))
    queued = []
    monkeypatch.setattr(
        "leaderboard.services.dispatch.send", lambda name, args, queue=None, countdown=None: queued.append(args[0])
    )
    with django_capture_on_commit_callbacks(execute=True):
        flips = [report_request(challenge_id=challenge.pk) for _ in range(50)]
    assert flips.count(True) == 1 and queued == [challenge.pk]
    assert Report.objects.get(challenge=challenge).recompute_pending
    report_recompute(challenge_id=challenge.pk)  # the task clears the flag before it reads the runs
    assert not Report.objects.get(challenge=challenge).recompute_pending
    with django_capture_on_commit_callbacks(execute=True):
        report_request(challenge_id=challenge.pk)
        report_request(challenge_id=challenge.pk)
    assert queued == [challenge.pk, challenge.pk]
