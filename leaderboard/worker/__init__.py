"""The worker's code: executing recipe runs and variance-study runs in the sandbox.

Only this package (and ``tasks/``, the Celery adapters that call it) imports the execution
engine (``execution``); the web side (``api``, ``web``, ``urls``, ``admin``, ``ops``,
``services``, ``uploads``, ``downloads``) never imports this package. Both rules are import
contracts in ``.importlinter``, checked by ``tests/test_architecture.py``.
"""
