"""Move the challenge's own dates and quotas into its phases before 0015 drops them (issue 24).

A challenge without a phase gets one, ``main``, with its dates, quotas and kinds, so every
challenge has at least one. A challenge with phases kept its dates as an outer window around
them: each phase's window is narrowed to it (a phase wholly outside it becomes a closed window of
one microsecond, as a reveal closes phases). The phases' quotas were already the ones
the uploads were charged to, so they stay.
"""

from datetime import timedelta

from django.db import migrations

TICK = timedelta(microseconds=1)


def _narrowed(phase, opens, closes):
    """The phase's (opens_at, closes_at) within the challenge's window [opens, closes)."""
    start, end = phase.opens_at, phase.closes_at
    if opens is not None and (start is None or start < opens):
        start = opens
    if closes is not None and (end is None or end > closes):
        end = closes
    if start is not None and end is not None and end <= start:  # wholly outside: it never took a submission
        end = start + TICK
    return start, end


def forwards(apps, schema_editor):
    Challenge = apps.get_model("leaderboard", "Challenge")
    Phase = apps.get_model("leaderboard", "Phase")
    for challenge in Challenge.objects.all().iterator():
        phases = list(Phase.objects.filter(challenge=challenge))
        if not phases:
            Phase.objects.create(
                challenge=challenge,
                name="main",
                order=0,
                opens_at=challenge.opens_at,
                closes_at=challenge.closes_at,
                daily_quota=challenge.daily_quota,
                total_quota=challenge.total_quota,
                allow_predictions=challenge.allow_predictions,
                allow_recipes=challenge.allow_recipes,
            )
            continue
        if challenge.opens_at is None and challenge.closes_at is None:
            continue
        for phase in phases:
            window = _narrowed(phase, challenge.opens_at, challenge.closes_at)
            if window != (phase.opens_at, phase.closes_at):
                phase.opens_at, phase.closes_at = window
                phase.save(update_fields=["opens_at", "closes_at"])


def backwards(apps, schema_editor):
    """The challenge's window becomes its phases' span and its quotas those of its first phase."""
    Challenge = apps.get_model("leaderboard", "Challenge")
    Phase = apps.get_model("leaderboard", "Phase")
    for challenge in Challenge.objects.all().iterator():
        phases = list(Phase.objects.filter(challenge=challenge).order_by("order", "opens_at", "id"))
        if not phases:
            continue
        opens = [p.opens_at for p in phases]
        closes = [p.closes_at for p in phases]
        challenge.opens_at = None if None in opens else min(opens)
        challenge.closes_at = None if None in closes else max(closes)
        challenge.daily_quota, challenge.total_quota = phases[0].daily_quota, phases[0].total_quota
        challenge.save(update_fields=["opens_at", "closes_at", "daily_quota", "total_quota"])


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0013_challenge_default_boo_n_3"),
    ]

    operations = [
        migrations.RunPython(forwards, backwards),
    ]
