"""Operations endpoints and middleware: health checks, HTTP 503 while the database is down, metrics."""
