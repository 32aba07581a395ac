# varboard: web (gunicorn), Celery workers, beat and the recipe runner services share this image
# (see docker-compose.yml).
#
#   docker build -t varboard .                                    # torch CPU build
#   docker build -t varboard:gpu --build-arg TORCH_EXTRA_INDEX= . # torch's default (CUDA) build
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DJANGO_ENV=production \
    VARBOARD_VAR_DIR=/data/var \
    VARBOARD_MEDIA_ROOT=/data/media

# Where torch comes from: the CPU-only wheels by default (Docker only; dev.py installs the pinned
# torch from the machine's package index). An empty value takes PyPI's default build, with CUDA.
ARG TORCH_EXTRA_INDEX=https://download.pytorch.org/whl/cpu

# bubblewrap isolates recipe runs (the runner services); libseccomp2 and util-linux's prlimit are
# already part of the slim image.
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY requirements.txt ./
# torch first and alone, so that nothing else can pull in a build of its own.
RUN pip install ${TORCH_EXTRA_INDEX:+--extra-index-url "$TORCH_EXTRA_INDEX"} "$(grep '^torch==' requirements.txt)" \
    && pip install -r requirements.txt

RUN useradd --create-home --uid 1000 varboard \
    && mkdir -p /data/var /data/media \
    && chown -R varboard:varboard /data
COPY --chown=varboard:varboard . .
# A throw-away key: settings refuse to load in production without one, and collectstatic needs none.
RUN DJANGO_SECRET_KEY=collectstatic-only python manage.py collectstatic --noinput -v 0

USER varboard
EXPOSE 8000
# Worker class, workers, threads and timeouts: gunicorn_web.conf.py (chosen by benchmarks/bench_load.py; README).
CMD ["gunicorn", "-c", "gunicorn_web.conf.py", "leaderboard.wsgi:application"]
