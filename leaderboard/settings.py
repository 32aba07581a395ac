"""Django settings for varboard, read from the environment.

Every setting that differs between a laptop and production comes from an environment
variable (see ``.env.example`` and the README's configuration table). With nothing set,
the project runs on the embedded defaults: SQLite under ``var/`` and an embedded
file-system Celery broker, so ``python3 dev.py demo`` works on a fresh machine.
"""

from __future__ import annotations

import ipaddress
from datetime import timedelta
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from .config import StrictEnv, s3_storages
from .logs import logging_config

BASE_DIR = Path(__file__).resolve().parent.parent
env = StrictEnv()

PRODUCTION = env.str("DJANGO_ENV", default="development") == "production"
DEBUG = env.bool("DJANGO_DEBUG", default=not PRODUCTION)

SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="")
if not SECRET_KEY:
    if PRODUCTION:
        raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set when DJANGO_ENV=production")
    SECRET_KEY = "dev-only-insecure-key-" + "x" * 40

ALLOWED_HOSTS = env.list(
    "DJANGO_ALLOWED_HOSTS", default=[] if PRODUCTION else ["127.0.0.1", "localhost", "testserver", "[::1]"]
)
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

VAR_DIR = Path(env.str("VARBOARD_VAR_DIR", default="") or BASE_DIR / "var")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "knox",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_prometheus",
    "leaderboard",
]

MIDDLEWARE = [
    "django_prometheus.middleware.PrometheusBeforeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "leaderboard.ops.unavailable.DatabaseUnavailableMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # gzip for HTML, JSON and CSV (issue 25), placed under WhiteNoise (which serves its own compressed static
    # files) and above every middleware that reads or writes the body; BREACH: see leaderboard/web/compression.py.
    "leaderboard.web.compression.TextGZipMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_prometheus.middleware.PrometheusAfterMiddleware",
]

ROOT_URLCONF = "leaderboard.urls"
WSGI_APPLICATION = "leaderboard.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "leaderboard.web.context.invitations",
            ],
            # {{ x|number:4 }} in every template: the one rule for printing a figure (leaderboard.web.numbers)
            "builtins": ["leaderboard.web.numbers"],
        },
    },
]

DATABASES = {"default": env.database("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}")}
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE", default=60, minimum=0)
# A persistent connection is checked before a request reuses it: after a database restart the
# first request reconnects instead of failing on a dead socket.
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # SQLite connections are cheap; never share one across threads

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = Path(env.str("DJANGO_STATIC_ROOT", default="") or BASE_DIR / "staticfiles")
STATICFILES_DIRS = [BASE_DIR / "leaderboard" / "static"]
WHITENOISE_USE_FINDERS = DEBUG  # in development, serve straight from the app's static folders
WHITENOISE_AUTOREFRESH = DEBUG
# Uploaded datasets, hidden labels and submissions (see leaderboard/storage.py). Never served
# directly by the web server: every download goes through a view that checks permissions.
# "local" (default): files under VARBOARD_MEDIA_ROOT, one machine or a shared volume.
# "s3": an S3-compatible object store (AWS S3, MinIO), so web and workers need no shared disk;
# the hidden labels go to a private bucket (or the private/ prefix of the same bucket).
MEDIA_ROOT = Path(env.str("VARBOARD_MEDIA_ROOT", default="") or VAR_DIR / "media")
FILE_UPLOAD_PERMISSIONS = 0o600
FILE_UPLOAD_DIRECTORY_PERMISSIONS = 0o700
STORAGE_KIND = env.str("VARBOARD_STORAGE", default="local")
if STORAGE_KIND == "local":
    _private_root = env.str("VARBOARD_PRIVATE_MEDIA_ROOT", default="")
    _media_storage = {"BACKEND": "leaderboard.storage.MediaStorage"}  # no half-written file on a full disk
    _hidden_storage = {
        "BACKEND": "leaderboard.storage.MediaStorage",
        "OPTIONS": {"location": _private_root} if _private_root else {},
    }
elif STORAGE_KIND == "s3":
    _bucket = env.str("VARBOARD_S3_BUCKET", default="")
    if not _bucket:
        raise ImproperlyConfigured("VARBOARD_S3_BUCKET must name the bucket when VARBOARD_STORAGE=s3")
    _s3 = s3_storages(
        bucket=_bucket,
        private_bucket=env.str("VARBOARD_S3_PRIVATE_BUCKET", default=""),
        endpoint_url=env.str("VARBOARD_S3_ENDPOINT_URL", default=""),
        region=env.str("VARBOARD_S3_REGION", default=""),
        # Empty: boto3's own chain (its AWS_* environment variables, an instance role).
        access_key=env.str("AWS_ACCESS_KEY_ID", default=""),
        secret_key=env.str("AWS_SECRET_ACCESS_KEY", default=""),
        addressing_style=env.str("VARBOARD_S3_ADDRESSING_STYLE", default="path"),
    )
    _media_storage, _hidden_storage = _s3["default"], _s3["hidden"]
else:
    raise ImproperlyConfigured(f"VARBOARD_STORAGE must be local or s3, not {STORAGE_KIND!r}")
STORAGES = {
    "default": _media_storage,
    "hidden": _hidden_storage,
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if PRODUCTION
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "home"

# ---------------------------------------------------------------- varboard limits
VARBOARD = {
    "MAX_DATASET_MB": env.int("VARBOARD_MAX_DATASET_MB", default=100, minimum=1),
    "MAX_PREDICTION_MB": env.int("VARBOARD_MAX_PREDICTION_MB", default=20, minimum=1),
    "MAX_RECIPE_KB": env.int("VARBOARD_MAX_RECIPE_KB", default=512, minimum=1),
    "MAX_PREDICTION_FILES": env.int("VARBOARD_MAX_PREDICTION_FILES", default=100, minimum=1),
    # Checked from a CSV's header line or a Parquet footer before anything is parsed (issue 22).
    "MAX_DATASET_COLUMNS": env.int("VARBOARD_MAX_DATASET_COLUMNS", default=10_000, minimum=2),
    # Most a Parquet dataset may decode to, checked from its footer before decoding (issue 22).
    "MAX_DATASET_DECODED_MB": env.int("VARBOARD_MAX_DATASET_DECODED_MB", default=256, minimum=1),
    # Memory (address space) the child process that parses an upload (a dataset, prediction files) may
    # use; never the web process's.
    "DATASET_PARSE_MB": env.int("VARBOARD_DATASET_PARSE_MB", default=1024, minimum=64),
    # Seconds that child may take (a dataset: parse, check, split and write its parts).
    "UPLOAD_CHECK_S": env.float("VARBOARD_UPLOAD_CHECK_S", default=60.0, minimum=1),
    # Prediction rows allowed beyond the test set's (blank lines); more are refused before parsing.
    "PREDICTION_EXTRA_ROWS": env.int("VARBOARD_PREDICTION_EXTRA_ROWS", default=1000, minimum=0),
    "RUN_WALL_TIME_S": env.int("VARBOARD_RUN_WALL_TIME_S", default=900, minimum=1),
    "RUN_MEMORY_MB": env.int("VARBOARD_RUN_MEMORY_MB", default=4096, minimum=256),
    "STUCK_RUN_GRACE_S": env.int("VARBOARD_STUCK_RUN_GRACE_S", default=300, minimum=0),
    # How many times a run or a scoring may be started (redeliveries and retries together).
    "MAX_RUN_ATTEMPTS": env.int("VARBOARD_MAX_RUN_ATTEMPTS", default=3, minimum=1),
    # A team whose files broke a host's scoring program this many times since its check submits no more.
    "PROGRAM_MAX_FAILURES": env.int("VARBOARD_PROGRAM_MAX_FAILURES", default=5, minimum=1),
    # Self-healing (leaderboard/services/janitor.py): a running run holds a lease its worker renews
    # every HEARTBEAT_S; the janitor runs every JANITOR_INTERVAL_S, queues again a run whose lease
    # expired and resends work queued longer than REQUEUE_AFTER_S that no broker queue holds.
    # Worst case to recovery: LEASE_S + JANITOR_INTERVAL_S (a lost worker) or REQUEUE_AFTER_S +
    # JANITOR_INTERVAL_S (a lost queue): 60 s and 90 s with the defaults.
    "LEASE_S": env.float("VARBOARD_LEASE_S", default=30.0, minimum=1),
    "HEARTBEAT_S": env.float("VARBOARD_HEARTBEAT_S", default=10.0, minimum=0.1),
    "JANITOR_INTERVAL_S": env.float("VARBOARD_JANITOR_INTERVAL_S", default=30.0, minimum=1),
    "REQUEUE_AFTER_S": env.float("VARBOARD_REQUEUE_AFTER_S", default=60.0, minimum=1),
    # How long a worker keeps a finished run's result in memory, storing it again with backoff, while
    # the database is unreachable (a run's result outlives a database outage up to this long).
    "RESULT_RETRY_S": env.float("VARBOARD_RESULT_RETRY_S", default=600.0, minimum=1),
    # Seconds a client is told to wait (Retry-After) when the database is unreachable (HTTP 503).
    "RETRY_AFTER_S": env.int("VARBOARD_RETRY_AFTER_S", default=5, minimum=1),
    # /health/ready answers 503 when the media disk has less free space than this (MB).
    "MIN_FREE_DISK_MB": env.int("VARBOARD_MIN_FREE_DISK_MB", default=512, minimum=0),
    # Bearer token a Prometheus scrape of /metrics must send; empty: /metrics is open (keep it internal).
    "METRICS_TOKEN": env.str("VARBOARD_METRICS_TOKEN", default=""),
    "REPORT_DEBOUNCE_S": env.float("VARBOARD_REPORT_DEBOUNCE_S", default=1.0, minimum=0),
    # Megabytes of boards' rank bootstraps a process keeps between report updates (services.rank_states: 400 MB for
    # a board of 20,000 entries at B = 2,000); 0 keeps none (every update re-ranks the entries near the newcomers).
    "RANK_STATE_MB": env.int("VARBOARD_RANK_STATE_MB", default=512, minimum=0),
    # A report recomputation whose task gave up (its retries spent: a database error that lasted) is sent
    # again by the janitor after this long, twice as long after each further give-up in a row, at most a day.
    "REPORT_GIVE_UP_RETRY_S": env.float("VARBOARD_REPORT_GIVE_UP_RETRY_S", default=600.0, minimum=1),
    # Seconds an anonymous leaderboard response is reused by a process without any query
    # (micro-caching). Production defaults to 1 s: a new report reaches anonymous readers
    # at most that much later; development and tests default to 0 (off).
    "LEADERBOARD_MICROCACHE_S": env.float(
        "VARBOARD_LEADERBOARD_MICROCACHE_S", default=1.0 if PRODUCTION else 0.0, minimum=0
    ),
    # Where the report's resampling runs (docs/scale.md): "auto" (torch on CUDA when the worker has a GPU
    # and a kernel is large enough to pay for the transfer, numpy otherwise), "numpy", or "torch" on
    # VARBOARD_STATS_DEVICE ("auto": CUDA when the worker has a GPU, else the CPU). Equal within Monte Carlo error.
    "STATS_BACKEND": env.str("VARBOARD_STATS_BACKEND", default="auto"),
    "STATS_DEVICE": env.str("VARBOARD_STATS_DEVICE", default="auto"),
    # Reverse proxies whose X-Forwarded-For is believed (comma-separated addresses or networks, e.g.
    # "10.0.0.5,172.18.0.0/16"). Empty: throttles key on the socket peer and ignore the header.
    "TRUSTED_PROXIES": env.list("VARBOARD_TRUSTED_PROXIES", default=[]),
}
try:
    VARBOARD["TRUSTED_PROXIES"] = [
        ipaddress.ip_network(item.strip(), strict=False) for item in VARBOARD["TRUSTED_PROXIES"] if item.strip()
    ]
except ValueError as error:
    raise ImproperlyConfigured(f"VARBOARD_TRUSTED_PROXIES must list addresses or networks: {error}") from None
if VARBOARD["STATS_BACKEND"] not in ("numpy", "torch", "auto"):
    raise ImproperlyConfigured(
        f"VARBOARD_STATS_BACKEND must be auto, numpy or torch (got {VARBOARD['STATS_BACKEND']!r})."
    )
DATA_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024  # larger uploads spool to a temporary file (issue 22)
# Count files and bytes while the body streams, and stop at the first over a limit (issue 22).
FILE_UPLOAD_HANDLERS = [
    "leaderboard.upload_handlers.BoundedUploadHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]
# Django's own backstop, a few above ours (a challenge's three datasets) so that ours answers first.
DATA_UPLOAD_MAX_NUMBER_FILES = VARBOARD["MAX_PREDICTION_FILES"] + 4

# ---------------------------------------------------------------- REST framework
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "knox.auth.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    # JSON bodies counted before they are parsed (leaderboard.api.parsers); forms and files as DRF parses them.
    "DEFAULT_PARSER_CLASSES": [
        "leaderboard.api.parsers.BoundedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "leaderboard.api.paging.StrictLimitOffsetPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "leaderboard.api.filters.StrictOrderingFilter",
    ],
    "DEFAULT_SCHEMA_CLASS": "leaderboard.api.schema.VarboardAutoSchema",
    "EXCEPTION_HANDLER": "leaderboard.api.exceptions.exception_handler",
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "leaderboard.api.renderers.NamedFormatNegotiation",
    "DEFAULT_THROTTLE_RATES": {
        "report_recompute": env.str("VARBOARD_RECOMPUTE_RATE", default="30/min"),
        # Failed log-ins (web and token) per client address and per (username, address); sign-ups per
        # address. The address is the socket peer unless VARBOARD_TRUSTED_PROXIES names it.
        "login": env.str("VARBOARD_LOGIN_RATE", default="10/hour"),
        "signup": env.str("VARBOARD_SIGNUP_RATE", default="20/hour"),
        # Password-reset mails asked for, per client address and per e-mail address.
        "password_reset": env.str("VARBOARD_PASSWORD_RESET_RATE", default="5/hour"),
    },
}
# API tokens (django-rest-knox): stored as SHA-512 digests, sent as `Authorization: Token <token>`.
REST_KNOX = {
    "TOKEN_TTL": timedelta(hours=env.int("VARBOARD_TOKEN_TTL_HOURS", default=24 * 30, minimum=1)),
    "AUTH_HEADER_PREFIX": "Token",
    "TOKEN_LIMIT_PER_USER": 50,
}
# Sign-ups stay inactive until the address is confirmed by a signed link (sent by EMAIL_BACKEND).
VARBOARD_EMAIL_VERIFICATION = env.bool("VARBOARD_EMAIL_VERIFICATION", default=False)
# How mails are sent (verification links, password resets, notifications). EMAIL_URL, parsed by
# django-environ (smtp://user:password@host:587, smtp+tls://…, consolemail://, filemail:///path,
# memorymail://), wins over DJANGO_EMAIL_BACKEND; with neither, mails are printed on the console.
if env.str("EMAIL_URL", default=""):
    globals().update(env.email("EMAIL_URL"))
else:
    EMAIL_BACKEND = env.str("DJANGO_EMAIL_BACKEND", default="django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env.str("DJANGO_DEFAULT_FROM_EMAIL", default="varboard@localhost")
PASSWORD_RESET_TIMEOUT = env.int("VARBOARD_PASSWORD_RESET_HOURS", default=24, minimum=1) * 3600
# Links in mails and webhook payloads, which no request is there to build: the site's public address.
SITE_URL = env.str("VARBOARD_SITE_URL", default="http://127.0.0.1:8000").rstrip("/")
# Webhooks (leaderboard/services/webhooks.py): POSTed by a task on the scoring queue, signed with
# HMAC-SHA256, retried with exponential backoff (RETRY_BASE_S, 2×, 4×, …) up to MAX_ATTEMPTS.
# Addresses on loopback or private networks are refused unless ALLOW_PRIVATE (the platform's own
# services live there).
WEBHOOKS = {
    "TIMEOUT_S": env.float("VARBOARD_WEBHOOK_TIMEOUT_S", default=10.0, minimum=0.1),
    "MAX_ATTEMPTS": env.int("VARBOARD_WEBHOOK_MAX_ATTEMPTS", default=6, minimum=1),
    "RETRY_BASE_S": env.float("VARBOARD_WEBHOOK_RETRY_BASE_S", default=30.0, minimum=0),
    "ALLOW_PRIVATE": env.bool("VARBOARD_WEBHOOK_ALLOW_PRIVATE", default=False),
    # An egress proxy (http://host:port) for deployments that have one: it resolves the names.
    "PROXY": env.str("VARBOARD_WEBHOOK_PROXY", default=""),
}
_proxy_host, _, _proxy_port = WEBHOOKS["PROXY"].removeprefix("http://").rstrip("/").rpartition(":")
if WEBHOOKS["PROXY"] and not (
    WEBHOOKS["PROXY"].startswith("http://")
    and _proxy_port.isdigit()
    and _proxy_host.replace(".", "").replace("-", "").isalnum()
):
    raise ImproperlyConfigured(f"VARBOARD_WEBHOOK_PROXY must be http://host:port, not {WEBHOOKS['PROXY']!r}")
SPECTACULAR_SETTINGS = {
    "TITLE": "varboard API",
    "DESCRIPTION": "Challenges, submissions, runs and variance-aware leaderboards "
    "(Boo_n, P(A>B), significance groups, multiplicity-adjusted state of the art).",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Serve Swagger UI and ReDoc from the sidecar package: no CDN, works offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # No "valid" badge fetched from validator.swagger.io: the docs load nothing from another host.
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None, "persistAuthorization": True},
    "ENUM_NAME_OVERRIDES": {
        "SubmissionStatusEnum": "leaderboard.choices.SubmissionStatus",
        "RunStatusEnum": "leaderboard.choices.RunStatus",
        "FeedbackEnum": "leaderboard.choices.Feedback",
        "RankingStatisticEnum": "leaderboard.choices.RankingStatistic",
        "SubmissionKindEnum": "leaderboard.choices.SubmissionKind",
        "ProvenanceSourceEnum": [
            ("self_reported", "Self-reported by its authors"),
            ("published", "Taken from a publication or public leaderboard"),
        ],
        "MeanSourceEnum": ["runs", "test examples", "test examples and files", "ladder"],
        "InversionKindEnum": ["statistic", "verdict"],
    },
}

# ---------------------------------------------------------------- Celery
# Without CELERY_BROKER_URL the embedded default is Kombu's file-system transport under
# var/broker: no Redis needed for the demo. Production and the integration tests use Redis.
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="filesystem://")
EMBEDDED_BROKER = CELERY_BROKER_URL.startswith("filesystem://")
# Seconds a publish's broker connection or reply may take (Redis; services.dispatch.send): a broker that accepts
# connections and never answers held a request's publish, after its commit, for minutes. The workers' consuming
# connections keep the transport's defaults (a timeout there reconnects and restores their unacked runs).
CELERY_BROKER_TIMEOUT_S = env.float("CELERY_BROKER_TIMEOUT_S", default=2.0, minimum=1.5)
# A publish that fails is tried twice more (Celery's default is three), so a request waits at most ~3 timeouts.
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.2}
if EMBEDDED_BROKER:
    _broker_dir = VAR_DIR / "broker"
    # Kombu's file-system transport needs its folders; a fresh VARBOARD_VAR_DIR has none.
    for _folder in ("queue", "control"):
        try:
            (_broker_dir / _folder).mkdir(parents=True, exist_ok=True)
        except OSError:  # read-only checkout: the worker reports the missing folder itself
            pass
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
    }
else:
    # Longer than the longest run, so a late-acked run is not redelivered while it runs.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=4 * 3600, minimum=1),
    }
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "scoring"
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=3600, minimum=1)
CELERY_TASK_TIME_LIMIT = CELERY_TASK_SOFT_TIME_LIMIT + 120
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BEAT_SCHEDULE = {
    # Each pass expires when the next is due: a backlog never piles up janitor passes.
    "janitor": {
        "task": "tasks.maintenance.janitor",
        "schedule": VARBOARD["JANITOR_INTERVAL_S"],
        "options": {"expires": VARBOARD["JANITOR_INTERVAL_S"]},
    },
}

# A Redis cache is optional at read time (leaderboard/cache.py): while Redis is down, reads miss
# and writes are dropped, counted in /metrics; CACHE_TIMEOUT_S bounds each try.
CACHE_TIMEOUT_S = env.float("CACHE_TIMEOUT_S", default=0.5)
CACHES = {"default": env.cache("CACHE_URL", default="locmemcache://")}
if CACHES["default"]["BACKEND"] == "django.core.cache.backends.redis.RedisCache":
    CACHES["default"] = {
        **CACHES["default"],
        "BACKEND": "leaderboard.cache.ResilientRedisCache",
        "OPTIONS": {
            "socket_connect_timeout": CACHE_TIMEOUT_S,
            "socket_timeout": CACHE_TIMEOUT_S,
            **CACHES["default"].get("OPTIONS", {}),
        },
    }

# The throttles' histories (failed log-ins, sign-ups, recomputations) in a cache of their own: in per-process memory
# they shared the default cache's 300 entries with cached pages and reports, which culled them, so a client that
# made the site cache a few hundred reports had its failed log-ins forgotten. With CACHE_URL, the same shared cache.
CACHES["throttles"] = (
    CACHES["default"]
    if CACHES["default"]["BACKEND"] != "django.core.cache.backends.locmem.LocMemCache"
    else {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "varboard-throttles",
        "OPTIONS": {"MAX_ENTRIES": 100_000},
    }
)

# Structured logs with the submission and run ids (leaderboard/logs.py): "json" (one object per
# line, the production default) or "plain" (readable, the development default).
LOG_FORMAT = env.str("VARBOARD_LOG_FORMAT", default="json" if PRODUCTION else "plain")
if LOG_FORMAT not in ("plain", "json"):
    raise ImproperlyConfigured(f"VARBOARD_LOG_FORMAT must be plain or json, not {LOG_FORMAT!r}")
LOGGING = logging_config(fmt=LOG_FORMAT, level=env.str("DJANGO_LOG_LEVEL", default="INFO"))

# ---------------------------------------------------------------- production hardening
if PRODUCTION:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env.int("DJANGO_HSTS_SECONDS", default=31536000, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_CONTENT_TYPE_NOSNIFF = True
    X_FRAME_OPTIONS = "DENY"
