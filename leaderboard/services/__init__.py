"""Business logic (writes). Views, serializers and tasks call these; reads live in ``selectors``."""
