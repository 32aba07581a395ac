"""Prometheus metrics at ``/metrics``.

Two sources in one exposition:

* **this process**, from django-prometheus: request latency, counts and statuses by view
  (``django_http_*``). Under gunicorn set ``PROMETHEUS_MULTIPROC_DIR`` (an empty folder, per
  container) so that every worker process's figures are merged, as prometheus_client's
  multiprocess mode does.
* **the platform**, read from the database and the broker at scrape time, so that they are the
  same whichever web process or machine answers and cover what the Celery workers did:
  queue lengths, runs and submissions by status, run durations, run failures by cause, run
  attempts (redeliveries and retries), the age of the oldest queued run, report
  recomputations. The database is the source of truth; no worker-side exporter is needed.

Protection: a scrape sends ``Authorization: Bearer <VARBOARD_METRICS_TOKEN>``. Without a token set,
``/metrics`` is closed (403 naming the setting) except under ``DEBUG`` (a developer's machine): the
platform figures count every challenge, private ones too, and docker-compose.yml publishes the web port
that serves it, so an open ``/metrics`` told any visitor when an unannounced challenge's submissions
queued and how many (``tests/platform/test_leaks_v3.py``).
"""

from __future__ import annotations

import hmac
import os

from django.conf import settings
from django.db.models import Case, Count, Min, Q, Sum, Value, When
from django.http import HttpResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest, multiprocess
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

from ..choices import RunStatus, SubmissionKind
from ..models import Report, Run, Submission
from ..services.dispatch import queue_lengths
from ..services.janitor import janitor_last_pass_age

QUEUES = ("scoring", "cpu", "gpu")
DURATION_BUCKETS = (0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600)


def failure_cause():
    """A SQL expression classifying a failed run: platform, cancelled, recipe or predictions."""
    return Case(
        When(error_message__startswith="platform error", then=Value("platform")),
        When(error_message="cancelled before it ran", then=Value("cancelled")),
        When(submission__kind=SubmissionKind.RECIPE, then=Value("recipe")),
        default=Value("predictions"),
    )


class PlatformCollector:
    """Platform-wide figures, read from the database and the broker when scraped."""

    def collect(self):
        lengths = queue_lengths(list(QUEUES))
        yield GaugeMetricFamily(
            "varboard_broker_up", "1 when the broker answered this scrape", value=0 if lengths is None else 1
        )
        queue = GaugeMetricFamily("varboard_queue_length", "Messages waiting in a broker queue", labels=["queue"])
        for name, length in (lengths or {}).items():
            queue.add_metric([name], length)
        yield queue

        runs = GaugeMetricFamily("varboard_runs", "Runs by status and kind", labels=["status", "kind"])
        for row in Run.objects.values("status", "submission__kind").annotate(n=Count("pk")).order_by():
            runs.add_metric([row["status"], row["submission__kind"]], row["n"])
        yield runs
        submissions = GaugeMetricFamily("varboard_submissions", "Submissions by status", labels=["status"])
        for row in Submission.objects.values("status").annotate(n=Count("pk")).order_by():
            submissions.add_metric([row["status"]], row["n"])
        yield submissions

        failures = CounterMetricFamily("varboard_run_failures", "Failed runs by cause", labels=["cause"])
        for row in (
            Run.objects.filter(status=RunStatus.FAILED)
            .annotate(cause=failure_cause())
            .values("cause")
            .annotate(n=Count("pk"))
            .order_by()
        ):
            failures.add_metric([row["cause"]], row["n"])
        yield failures

        yield from self._durations()
        totals = Run.objects.aggregate(
            attempts=Sum("attempts"), oldest=Min("enqueued_at", filter=Q(status=RunStatus.QUEUED))
        )
        yield CounterMetricFamily(
            "varboard_run_attempts",
            "Run claims: first deliveries, redeliveries and retries",
            value=totals["attempts"] or 0,
        )
        oldest = (timezone.now() - totals["oldest"]).total_seconds() if totals["oldest"] else 0.0
        yield GaugeMetricFamily(
            "varboard_oldest_queued_run_seconds", "Age of the oldest queued run (0: none)", value=oldest
        )
        age = janitor_last_pass_age()
        if age is not None:
            yield GaugeMetricFamily(
                "varboard_janitor_last_pass_seconds", "Seconds since the janitor's last pass", value=age
            )
        recomputed = Report.objects.aggregate(n=Sum("recompute_count"))["n"] or 0
        yield CounterMetricFamily("varboard_report_recomputations", "Leaderboard reports rebuilt", value=recomputed)

    def _durations(self):
        histogram = HistogramMetricFamily("varboard_run_duration_seconds", "Duration of ended runs", labels=["kind"])
        buckets = {f"le_{i}": Count("pk", filter=Q(duration_s__lte=bound)) for i, bound in enumerate(DURATION_BUCKETS)}
        rows = (
            Run.objects.filter(duration_s__isnull=False)
            .values("submission__kind")
            .annotate(n=Count("pk"), total=Sum("duration_s"), **buckets)
            .order_by()
        )
        for row in rows:
            cumulative = [(str(float(bound)), row[f"le_{i}"]) for i, bound in enumerate(DURATION_BUCKETS)]
            histogram.add_metric([row["submission__kind"]], cumulative + [("+Inf", row["n"])], row["total"] or 0.0)
        yield histogram


def _process_registry():
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return registry
    return REGISTRY


#: The answer without a token set: the figures cover private challenges, so nobody reads them.
CLOSED = (
    "/metrics is closed: its figures count every challenge's runs and submissions, private ones too. "
    "Set VARBOARD_METRICS_TOKEN and scrape with Authorization: Bearer <VARBOARD_METRICS_TOKEN>.\n"
)


def _authorized(request) -> bool:
    token = settings.VARBOARD["METRICS_TOKEN"]
    sent = request.headers.get("Authorization", "")
    return hmac.compare_digest(sent.encode(), f"Bearer {token}".encode())


@never_cache
@require_GET
def metrics(request):
    if not settings.VARBOARD["METRICS_TOKEN"] and not settings.DEBUG:
        return HttpResponse(CLOSED, status=403, content_type="text/plain")
    if settings.VARBOARD["METRICS_TOKEN"] and not _authorized(request):
        response = HttpResponse(
            "Send the metrics token: Authorization: Bearer <VARBOARD_METRICS_TOKEN>.\n",
            status=401,
            content_type="text/plain",
        )
        response["WWW-Authenticate"] = "Bearer"
        return response
    platform = CollectorRegistry(auto_describe=False)
    platform.register(PlatformCollector())
    body = generate_latest(_process_registry()) + generate_latest(platform)
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
