"""The Celery application: queues ``scoring`` (prediction files, reports), ``cpu`` and ``gpu`` (recipe runs)."""

import os

from celery import Celery
from celery.signals import worker_process_init
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")

app = Celery("varboard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = (Queue("scoring"), Queue("cpu"), Queue("gpu"))
app.conf.task_routes = {
    "tasks.scoring.*": {"queue": "scoring"},
    "tasks.reports.*": {"queue": "scoring"},
    "tasks.maintenance.*": {"queue": "scoring"},
    # tasks.runs.execute_run is routed per challenge (cpu or gpu) when it is enqueued.
}
app.conf.include = ["tasks.scoring", "tasks.runs", "tasks.reports", "tasks.maintenance"]


@worker_process_init.connect
def _pin_gpu(**_kwargs) -> None:
    """Each pool process of a GPU worker uses one device (see tasks/gpu.py)."""
    from billiard.process import current_process

    from tasks.gpu import pin_this_process

    pin_this_process(getattr(current_process(), "index", 0) or 0)
