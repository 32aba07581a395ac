"""Server-rendered HTML pages: challenges, submissions, teams and accounts."""
