"""The Celery application: queues ``scoring`` (prediction files, reports), ``cpu`` and ``gpu`` (recipe runs)."""

import os

from celery import Celery
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")

app = Celery("varboard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = (Queue("scoring"), Queue("cpu"), Queue("gpu"))
app.conf.task_routes = {
    "tasks.scoring.*": {"queue": "scoring"},
    "tasks.reports.*": {"queue": "scoring"},
    "tasks.maintenance.*": {"queue": "scoring"},
    "tasks.notifications.*": {"queue": "scoring"},
    # tasks.runs.execute_run is routed per challenge (cpu or gpu) when it is enqueued.
}
app.conf.include = [
    "tasks.scoring",
    "tasks.runs",
    "tasks.reports",
    "tasks.maintenance",
    "tasks.variance_studies",
    "tasks.notifications",
]
