"""Wording a new user met on the way (the new user's review, 2026-11-30): the Boo_1 warning at a challenge's creation
and the charts' descriptions of a board of one entry."""

from __future__ import annotations


def test_the_boo_1_warning_at_creation_reads_as_one_sentence():
    """It read "k = 3 runs per entry is fewer than 6, as for the mean (Boo_1 is the mean of the runs) for Boo_1:
    the leaderboard will show ..." (the rule's phrase with "for Boo_1" tacked on after its parenthesis)."""
    from leaderboard.services.challenges import challenge_settings_warnings

    _, _, boo = challenge_settings_warnings(k_runs=3, boo_n=1)  # the mean's, a mean board's rank intervals', Boo_1's
    assert boo.startswith(
        "k = 3 runs per entry is fewer than the 6 Boo_1 needs, as for the mean (Boo_1 is the mean of the runs): "
        "the leaderboard will show Boo_1 without an interval"
    ), boo
    assert ") for Boo_1" not in boo
    _, other = challenge_settings_warnings(k_runs=10, boo_n=5)  # after a mean board's rank intervals' (rank23)
    assert other.startswith("k = 10 runs per entry is fewer than 10n = 50 for Boo_5: ")


def test_a_chart_of_one_entry_says_1_entry():
    """The private board of the demo's digits holds one recipe entry: its chart said "1 entries: ..."."""
    from leaderboard.web.charts import forest_plot, strip_plot

    one = [{"method_name": "x", "mean": {"estimate": 0.5, "low": 0.4, "high": 0.6}, "runs": [0.4, 0.5, 0.6]}]
    assert "1 entry: x;" in forest_plot(one) and "1 entries" not in forest_plot(one)
    two = [one[0], {**one[0], "method_name": "y"}]
    assert "2 entries: x, y;" in forest_plot(two)
    assert "1 entry: x;" in strip_plot({"x": [0.4, 0.5, 0.6]})


def test_the_readme_s_api_example_creates_a_draft_that_a_patch_publishes(db):
    """The README's hosting example through the API published the challenge at once (``visibility`` defaults to
    public), where the web form the README describes just above starts a draft: a new host following it had an open
    challenge before checking its data. The example now sends ``visibility=private`` and says how to publish."""
    import re
    import shlex
    from pathlib import Path

    from django.core.files.uploadedfile import SimpleUploadedFile
    from rest_framework.test import APIClient

    from .factories import make_user

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    example = readme[readme.index('curl -H "Authorization: Token $TOKEN" http://127.0.0.1:8000/api/challenges/ \\') :]
    example = example[: example.index("```")].replace("\\\n", " ")
    words = shlex.split(example)
    fields = dict(words[i + 1].split("=", 1) for i, word in enumerate(words) if word == "-F")
    assert fields.pop("dataset") == "@iris.csv"
    rows = ["id,x,species,is_test"] + [f"r{i},{i % 7},{'ab'[i % 2]},{int(i % 3 == 0)}" for i in range(30)]
    host = make_user("host")
    client = APIClient()
    client.force_authenticate(host)
    dataset = SimpleUploadedFile("iris.csv", ("\n".join(rows) + "\n").encode(), content_type="text/csv")
    created = client.post("/api/challenges/", {**fields, "dataset": dataset}, format="multipart")
    assert created.status_code == 201, created.json()
    slug = created.json()["slug"]
    assert APIClient().get(f"/api/challenges/{slug}/").status_code == 404  # a draft: its hosts alone see it
    assert re.search(r'`PATCH /api/challenges/\{slug\}/`\s+`\{"visibility": "public"\}`', readme)
    assert client.patch(f"/api/challenges/{slug}/", {"visibility": "public"}, format="json").status_code == 200
    assert APIClient().get(f"/api/challenges/{slug}/").status_code == 200
