"""What docker-compose.yml and the Dockerfile must do for recipe isolation, read from the files.

No Docker engine runs here, so the conditions compose creates are reproduced where they
matter (tests/integration/test_isolation.py runs a worker as the image's uid 1000); these
tests check that the files ask for exactly those conditions: recipes run only on runner
services that hold no secret, on a network that reaches no other service, with the relaxed
container defaults bubblewrap needs and nothing more.
"""

from __future__ import annotations

import yaml

from tests.conftest import ROOT

COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
SECRET_NAMES = (
    "DJANGO_SECRET_KEY",
    "DATABASE_URL",
    "PGPASSWORD",
    "CELERY_BROKER_URL",
    "CACHE_URL",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_ACCESS_KEY_ID",
    "POSTGRES_PASSWORD",
    "MINIO_ROOT_PASSWORD",
)


def test_recipes_run_only_on_runner_services_that_hold_no_secret():
    for name in ("runner-cpu", "runner-gpu"):
        runner = SERVICES[name]
        assert "execution.service:app" in " ".join(runner["command"])
        assert not set(runner.get("environment", {})) & set(SECRET_NAMES), name
        assert "env_file" not in runner and "volumes" not in runner, name
        assert runner["networks"] == ["runners"], name
        assert runner.get("user") == "varboard"
    assert COMPOSE["networks"]["runners"]["internal"] is True
    for name in ("postgres", "redis", "minio", "web", "beat", "worker-scoring"):
        assert "runners" not in (SERVICES[name].get("networks") or []), name


def test_runners_get_the_container_options_bubblewrap_needs_and_no_privilege():
    runner = SERVICES["runner-cpu"]
    assert set(runner["security_opt"]) == {
        "seccomp=unconfined",
        "apparmor=unconfined",
        "systempaths=unconfined",
        "no-new-privileges:true",
    }
    assert runner["cap_drop"] == ["ALL"] and not runner.get("cap_add") and not runner.get("privileged")
    assert runner["init"] is True
    assert "/health" in " ".join(runner["healthcheck"]["test"])


def test_recipe_workers_send_runs_to_a_runner_and_wait_for_it():
    for worker, runner in (("worker-cpu", "runner-cpu"), ("worker-gpu", "runner-gpu")):
        service = SERVICES[worker]
        assert service["environment"]["VARBOARD_RUNNER_URL"] == f"http://{runner}:8700"
        assert service["depends_on"][runner]["condition"] == "service_healthy"
        assert "python -m execution.probe" in " ".join(service["healthcheck"]["test"])
        assert "security_opt" not in service and not service.get("privileged")
        assert "VARBOARD_ALLOW_UNSANDBOXED" not in service["environment"]
    gpu = SERVICES["runner-gpu"]["deploy"]["resources"]["reservations"]["devices"][0]
    assert gpu["capabilities"] == ["gpu"]


def test_the_image_installs_bubblewrap_and_runs_as_an_unprivileged_user():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "apt-get install -y --no-install-recommends bubblewrap" in dockerfile
    assert "useradd --create-home --uid 1000 varboard" in dockerfile and "\nUSER varboard\n" in dockerfile
    assert "pyseccomp==" in (ROOT / "requirements.txt").read_text()
