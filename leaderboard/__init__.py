import os

# Arrow's C++ code allocates from the process's default pool, chosen when pyarrow is imported (mimalloc here):
# ``pa.set_memory_pool`` in the parsing child does not reach it, and mimalloc reserves 1 GiB arenas, which the
# child's RLIMIT_AS refuses. Forked from a request thread (runserver, gunicorn's gthread workers) the child then
# failed every dataset upload with "the file needs more than 1,024 MB" (a 20 KB CSV: pandas' ``isin`` on a string
# column, "malloc of size 640 failed"). Every process of the site imports this package before pyarrow.
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")

from .celery import app as celery_app  # noqa: E402 - after the allocator is chosen

__all__ = ["celery_app"]
