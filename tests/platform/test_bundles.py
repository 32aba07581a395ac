"""Issue 26: a challenge exported as a bundle (settings, phases, pages, data, public rows) and re-created from it
gives the same challenge and, for the same prediction files, identical public and private boards; a bad bundle
is refused naming the problem and leaves nothing behind."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evaluation.boards import round_floats
from leaderboard.models import AuditEntry, Challenge
from leaderboard.services.boards import board_public_mask
from leaderboard.services.bundles import bundle_export, bundle_import
from leaderboard.services.challenges import CHALLENGE_FIELDS, challenge_reveal, challenge_update
from leaderboard.services.dataset_files import dataset_frame, dataset_hidden_labels, dataset_test_ids
from leaderboard.services.errors import NotAllowed, ServiceError
from leaderboard.services.phases import PHASE_FIELDS, phase_create, phase_update
from leaderboard.services.registrations import registration_register
from leaderboard.services.reports import report_current, report_recompute

from .factories import days_ahead, digits_challenge, make_user
from .test_boards import submit
from .test_web import media_files

pytestmark = pytest.mark.django_db


def _phased(host):
    challenge, _ = digits_challenge(
        host,
        public_fraction=0.5,
        bootstrap_resamples=200,
        title="Bundled",
        closes_at=days_ahead(3),
        rules="Be kind.",
        description="Digits, *bundled*.",
        secondary_metrics=["macro_f1", "balanced_accuracy"],
    )
    phase_create(
        challenge=challenge,
        user=host,
        name="final",
        opens_at=days_ahead(3),
        closes_at=days_ahead(9),
        total_quota=2,
        test_rows="all",
    )
    return challenge


def _board(challenge, board):
    data = report_current(challenge=challenge, board=board).data
    # The copy's test rows come in another order, so sums over them may differ in the last bit.
    return [
        round_floats(
            [
                e["method_name"],
                e["mean"]["estimate"],
                e["mean"]["low"],
                e["mean"]["high"],
                e["rank_display"],
                e["secondary"],
            ],
            9,
        )
        for e in data["entries"]
    ]


def assert_same_challenge(original, copy) -> set:
    """The copy has the original's settings, phases, data and public test rows (returned, by id)."""
    for name in CHALLENGE_FIELDS:
        assert getattr(copy, name) == getattr(original, name), name
    phases = [[getattr(p, name) for name in PHASE_FIELDS] for p in original.phases.order_by("order")]
    assert [[getattr(p, name) for name in PHASE_FIELDS] for p in copy.phases.order_by("order")] == phases
    for part in ("train", "test_inputs", "hidden_labels"):
        a, b = (
            dataset_frame(dataset=c.dataset, part=part).sort_values("id").reset_index(drop=True)
            for c in (original, copy)
        )
        assert a.equals(b), part
    public = [
        set(np.array(dataset_test_ids(dataset=c.dataset))[board_public_mask(dataset=c.dataset)])
        for c in (original, copy)
    ]
    assert public[0] == public[1]
    return public[1]


def test_a_challenge_round_trips_through_its_bundle_with_identical_boards(host, alice, bob):
    original = _phased(host)
    data = bundle_export(challenge=original, user=host)
    assert AuditEntry.objects.filter(challenge=original, action="bundle_exported", actor=host).exists()
    manifest = json.loads(zipfile.ZipFile(io.BytesIO(data)).read("manifest.json"))
    assert manifest["format"] == "varboard-bundle" and manifest["pages"]["rules"] == "Be kind."
    assert manifest["challenge"]["secondary_metrics"] == ["macro_f1", "balanced_accuracy"]
    copy = bundle_import(data=data, user=bob, slug="bundled-copy")
    assert list(copy.hosts.all()) == [bob]
    public = assert_same_challenge(original, copy)
    assert 0 < len(public) < original.dataset.n_test
    # the same files (by id) on both: identical public and private boards
    rng = np.random.default_rng(5)
    truth = dict(zip(dataset_test_ids(dataset=original.dataset), dataset_hidden_labels(dataset=original.dataset)))
    guesses = {i: (t if rng.random() < 0.7 else "0") for i, t in truth.items()}
    for challenge in (original, copy):
        registration_register(challenge=challenge, user=alice, accept_rules=True)
        ids = dataset_test_ids(dataset=challenge.dataset)
        submit(challenge, alice, [truth[i] for i in ids], "exact")
        submit(challenge, alice, [guesses[i] for i in ids], "guess")
    assert _board(original, "public") == _board(copy, "public")
    assert _board(original, "private") == _board(copy, "private")
    assert copy.secondary_metrics == ["macro_f1", "balanced_accuracy"]
    assert [v["name"] for v in _board(copy, "private")[0][-1]] == ["macro_f1", "balanced_accuracy"]
    assert all(v["mean"]["low"] is not None for row in _board(copy, "public") for v in row[-1])


def test_only_hosts_export_and_a_bad_bundle_is_refused_leaving_nothing(host, alice, media):
    original = _phased(host)
    with pytest.raises(NotAllowed):
        bundle_export(challenge=original, user=alice)
    data = bundle_export(challenge=original, user=host)
    before = Challenge.objects.count()
    with pytest.raises(ServiceError, match="not a zip file"):
        bundle_import(data=b"PK nonsense", user=alice)
    broken = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(broken, "w") as target:
        for item in source.namelist():
            content = source.read(item)
            if item == "manifest.json":
                manifest = json.loads(content)
                manifest["phases"][1]["opens_at"] = manifest["phases"][0]["opens_at"]  # overlaps the first
                content = json.dumps(manifest).encode()
            target.writestr(item, content)
    stored_before = sorted(media.rglob("*"))
    with pytest.raises(ServiceError, match="overlaps"):
        bundle_import(data=broken.getvalue(), user=alice, slug="broken-copy")
    assert Challenge.objects.count() == before and not Challenge.objects.filter(slug="broken-copy").exists()
    # no stored file left behind, nor the folders they were in (challenges/broken-copy/ and its scoring/ were)
    assert sorted(media.rglob("*")) == stored_before


def _replaced(data: bytes, name: str, content: bytes) -> bytes:
    """The bundle ``data`` with member ``name`` holding ``content`` (deflated)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.namelist():
            target.writestr(item, content if item == name else source.read(item))
    return out.getvalue()


def test_a_bundle_part_is_unpacked_to_disk_and_refused_past_a_datasets_limit(host, settings, media, monkeypatch):
    """A 40 KB zip whose train.csv unpacks to 3 MB, under a 1 MB dataset limit: refused while it unpacks, by the
    limit of a dataset upload; a part was read whole into the web process before (up to 200 MB each). An accepted
    bundle's parts reach the challenge's preparation as files, never as bytes of the web process."""
    data = bundle_export(challenge=_phased(host), user=host)
    settings.VARBOARD = {**settings.VARBOARD, "MAX_DATASET_MB": 1}
    bomb = _replaced(data, "data/train.csv", b"id,label\n" + b"1,1\n" * 800_000)
    assert len(bomb) < 100_000
    before = Challenge.objects.count()
    with pytest.raises(ServiceError, match=r"^data/train.csv unpacks to more than 1 MB, a dataset's limit.$"):
        bundle_import(data=bomb, user=host, slug="bomb")
    assert Challenge.objects.count() == before
    import leaderboard.services.bundles as bundles

    seen = []
    original = bundles.challenge_create

    def recording(*, dataset, **kwargs):
        seen.append((type(dataset.data), type(dataset.test_data), type(dataset.test_labels_data)))
        return original(dataset=dataset, **kwargs)

    monkeypatch.setattr(bundles, "challenge_create", recording)
    settings.VARBOARD = {**settings.VARBOARD, "MAX_DATASET_MB": 100}
    assert bundle_import(data=data, user=host, slug="from-files").dataset.n_test > 0
    assert [tuple(kind.__name__ for kind in kinds) for kinds in seen] == [("PosixPath",) * 3]
    damaged = bytearray(data)
    at = damaged.find(b"data/hidden_labels.csv") + len(b"data/hidden_labels.csv") + 40  # inside its deflated stream
    damaged[at : at + 8] = b"\x00" * 8
    with pytest.raises(ServiceError) as refused:
        bundle_import(data=bytes(damaged), user=host, slug="damaged")
    assert refused.value.message.startswith("data/hidden_labels.csv is damaged in the bundle: ")


def test_a_manifest_is_bounded_before_it_is_parsed(host, media, monkeypatch):
    """A 94 KB bundle whose manifest.json unpacks to 94 MB of ``[],`` took 2.3 GB of the web process's
    memory in json.loads. The manifest is unpacked under its own limit (8 MB) and its arrays and objects
    counted outside its strings before it is parsed; a long page full of brackets is still a bundle."""
    import leaderboard.services.bundles as bundles

    challenge = _phased(host)
    data = bundle_export(challenge=challenge, user=host)
    manifest = json.loads(zipfile.ZipFile(io.BytesIO(data)).read("manifest.json"))
    head = json.dumps({**manifest, "dataset": {**manifest["dataset"], "public_ids": []}}).encode()
    cut = head.index(b'"public_ids": [') + len(b'"public_ids": [')
    bomb = _replaced(data, "manifest.json", head[:cut] + b"[]," * 33_000_000 + b"[]" + head[cut:])
    assert len(bomb) < 200_000
    parsed = []
    real_loads = json.loads
    monkeypatch.setattr(bundles.json, "loads", lambda text, **kw: parsed.append(len(text)) or real_loads(text, **kw))
    before = Challenge.objects.count()
    with pytest.raises(ServiceError, match=r"^manifest.json unpacks to more than 8 MB, a bundle manifest's limit.$"):
        bundle_import(data=bomb, user=host, slug="manifest-bomb")
    nested = _replaced(data, "manifest.json", head[:cut] + b"[]," * 20_000 + b"[]" + head[cut:])  # 60 KB
    with pytest.raises(
        ServiceError, match=r"^manifest.json holds more than 10,000 arrays and objects; .* may hold 10,000.$"
    ):
        bundle_import(data=nested, user=host, slug="manifest-nested")
    assert parsed == [] and Challenge.objects.count() == before  # refused unparsed, nothing created
    brackets = {**manifest, "pages": {**manifest["pages"], "description": "[link] {x} " * 20_000}}
    text = json.dumps(brackets).encode()
    copy = bundle_import(data=_replaced(data, "manifest.json", text), user=host, slug="pages")
    assert copy.description.count("[link]") == 20_000 and parsed[0] == len(text)  # the manifest, parsed


def test_the_manifest_count_reads_each_byte_once_and_only_utf8():
    """An unterminated string after many brackets made the count rescan from every quote (16,000 pairs
    took 3.5 s, growing as their square: an 8 MB manifest hours); and UTF-16, which json.loads accepts,
    hid brackets from a count made on the raw bytes."""
    from leaderboard.services.bundles import _bounded_manifest

    stalled = b"[" * 10_001 + b'"' + b'\\"' * 200_000  # 400 KB: minutes of rescanning before
    with pytest.raises(
        ServiceError, match=r"^manifest.json holds more than 10,000 arrays and objects; .* may hold 10,000.$"
    ):
        _bounded_manifest(stalled)
    inside = b'{"page": "' + b"[" * 20_000 + b'"}'  # brackets in a string are text
    assert _bounded_manifest(inside) == inside
    wide = ('{"a": "\\"", "v": [' + "[]," * 20_000 + '[]], "b": "\\""}').encode("utf-16")
    with pytest.raises(ServiceError, match=r"^manifest.json is not UTF-8 text \(byte 0\).$"):
        _bounded_manifest(wide)


def test_a_bundle_of_many_files_is_refused_before_the_zip_is_read(host, media):
    """zipfile builds one object per entry of the central directory: 177,000 empty entries (14 MB) took
    +100 MB, and a bundle may be 200 MB. The count declared by the zip's last record is read first."""
    data = bundle_export(challenge=_phased(host), user=host)
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for item in source.namelist():
            target.writestr(item, source.read(item))
        for n in range(100):
            target.writestr(f"extra/{n}", b"")
    many = out.getvalue()
    with pytest.raises(
        ServiceError, match=r"^The bundle holds 104 files \(.* bytes of directory\); a bundle holds at most 64 files.$"
    ):
        bundle_import(data=many, user=host, slug="many")
    end = many.rfind(b"PK\x05\x06")  # the counts set to 1: zipfile reads the directory's size, not them
    lying = many[: end + 8] + (1).to_bytes(2, "little") * 2 + many[end + 12 :]
    assert len(zipfile.ZipFile(io.BytesIO(lying)).namelist()) == 104
    with pytest.raises(ServiceError, match=r"^The bundle holds 104 files; a bundle holds at most 64 files.$"):
        bundle_import(data=lying, user=host, slug="many")
    huge = lying[: end + 12] + (10**6).to_bytes(4, "little") + lying[end + 16 :]  # a directory declared too large
    with pytest.raises(
        ServiceError, match=r"^The bundle holds 1 files \(1,000,000 bytes of directory\); .* 64 files.$"
    ):
        bundle_import(data=huge, user=host, slug="many")
    assert bundle_import(data=data, user=host, slug="few").slug == "few"  # 4 or 5 files


def test_bundles_on_the_web(client, host):
    original = _phased(host)
    client.force_login(make_user("stranger"))
    assert client.get(f"/c/{original.slug}/bundle/").status_code == 403
    client.force_login(host)
    assert f"/c/{original.slug}/bundle/" in client.get(f"/c/{original.slug}/edit/").content.decode()
    response = client.get(f"/c/{original.slug}/bundle/")
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"] == f'attachment; filename="{original.slug}-bundle.zip"'
    created = client.post(
        "/challenges/new/bundle/",
        {
            "bundle": SimpleUploadedFile("b.zip", response.getvalue(), content_type="application/zip"),
            "slug": "web-copy",
        },
    )
    assert created.status_code == 302 and created["Location"] == "/c/web-copy/"
    assert Challenge.objects.get(slug="web-copy").phases.count() == 2
    refused = client.post("/challenges/new/bundle/", {"bundle": SimpleUploadedFile("b.zip", b"not a zip")})
    assert refused.status_code == 200 and "not a zip file" in refused.content.decode()


def test_bundles_through_the_api(host, alice):
    from rest_framework.test import APIClient

    original = _phased(host)
    api = APIClient()
    api.force_authenticate(alice)
    assert api.get(f"/api/challenges/{original.slug}/bundle/").status_code == 403  # not a host
    api.force_authenticate(host)
    exported = api.get(f"/api/challenges/{original.slug}/bundle/")
    assert exported.status_code == 200 and exported["Content-Type"] == "application/zip"
    api.force_authenticate(alice)
    created = api.post(
        "/api/challenges/bundle/",
        {"bundle": SimpleUploadedFile("b.zip", exported.getvalue()), "slug": "api-copy"},
        format="multipart",
    )
    assert created.status_code == 201, created.json()
    assert created.json()["slug"] == "api-copy" and len(created.json()["phases"]) == 2
    refused = api.post("/api/challenges/bundle/", {"bundle": SimpleUploadedFile("b.zip", b"nope")}, format="multipart")
    assert refused.status_code == 400 and "not a zip file" in refused.json()["detail"]


def test_a_scoring_program_and_its_metrics_travel_in_the_bundle_and_are_checked_again(
    host, queued, django_capture_on_commit_callbacks
):
    from leaderboard.choices import ProgramStatus
    from leaderboard.services.dispatch import CHECK_SCORING_PROGRAM

    from .test_scoring_programs import PROGRAM, check_in_process, guesses, ready
    from .test_scoring_programs import submit as submit_scored

    original = ready(host, public_fraction=0.5)
    data = bundle_export(challenge=original, user=host)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        manifest = json.loads(archive.read("manifest.json"))
        assert archive.read("scoring/scoring.py") == PROGRAM
    assert manifest["scoring_program"] == {"file": "scoring/scoring.py", "metrics": original.program_metrics}
    with django_capture_on_commit_callbacks(execute=True):
        copy = bundle_import(data=data, user=host, slug="animals-copy")
    assert copy.program_status == ProgramStatus.CHECKING and queued.ids(CHECK_SCORING_PROGRAM) == [copy.pk]
    with copy.scoring_program.open("rb") as handle:
        assert handle.read() == PROGRAM
    assert copy.program_metrics == original.program_metrics and copy.higher_is_better is False
    with pytest.raises(ServiceError, match="has not finished yet"):
        challenge_update(challenge=copy, user=host, visibility="public")
    copy = check_in_process(copy)
    assert copy.program_status == ProgramStatus.OK
    copy = challenge_update(challenge=copy, user=host, visibility="public")
    truth = dict(zip(dataset_test_ids(dataset=original.dataset), dataset_hidden_labels(dataset=original.dataset)))
    labels = dict(zip(truth, guesses(np.array(list(truth.values())), 0.7, 9)))
    for challenge in (original, copy):
        ids = dataset_test_ids(dataset=challenge.dataset)
        submit_scored(challenge, make_user(f"a-{challenge.pk}"), [np.array([labels[i] for i in ids])], "mine")
        submit_scored(challenge, make_user(f"b-{challenge.pk}"), [np.array([truth[i] for i in ids])], "truth")
        report_recompute(challenge_id=challenge.pk)
    for board in ("public", "private"):
        if board == "private":
            for challenge in (original, copy):
                challenge_reveal(challenge=challenge, user=host)
                report_recompute(challenge_id=challenge.pk)
        assert _board(copy, board) == _board(original, board)
        assert _board(copy, board)[0][0] == "truth"  # cost 0 ranks first


def test_a_bundles_program_is_read_up_to_a_programs_limit_and_refused_past_it(host, media):
    from .test_scoring_programs import ready

    data = bundle_export(challenge=ready(host), user=host)
    padded = _replaced(data, "scoring/scoring.py", b"# pad\n" * 400_000)  # 2.4 MB that deflates to a few KB
    assert len(padded) < 200_000
    before = Challenge.objects.count()
    with pytest.raises(ServiceError, match=r"scoring/scoring.py is larger than 1000 KB, a scoring program's limit"):
        bundle_import(data=padded, user=host, slug="padded")
    assert Challenge.objects.count() == before and not Challenge.objects.filter(slug="padded").exists()


@pytest.mark.parametrize(
    "setting, value, message",
    [
        ("boo_n", 0, "boo_n: Ensure this value is greater than or equal to 1."),
        ("gamma", 1.5, "gamma: "),
        ("bootstrap_resamples", 0, "bootstrap_resamples: Ensure this value is greater than or equal to 100."),
        ("feedback", "bogus", "feedback: Value 'bogus' is not a valid choice."),
        ("master_seed", -5, "master_seed: "),
        ("k_runs", "ten", "k_runs: “ten” value must be an integer."),
        ("k_runs", -3, "k_runs: "),
    ],
)
def test_a_bundle_s_settings_are_checked_as_the_api_checks_them(host, media, setting, value, message):
    """Found by a new host: a bundle's manifest reached the database with boo_n 0, gamma 1.5 or a feedback of
    'bogus' (the API refuses them on create); the challenge list then answered 500 to every reader, and
    'ten' runs or a negative seed made the import itself a 500. Each is now refused, naming the setting, and
    nothing is left behind."""
    data = bundle_export(challenge=_phased(host), user=host)
    manifest = json.loads(zipfile.ZipFile(io.BytesIO(data)).read("manifest.json"))
    manifest["challenge"][setting] = value
    before = (Challenge.objects.count(), media_files(media))
    with pytest.raises(ServiceError) as refused:
        bundle_import(data=_replaced(data, "manifest.json", json.dumps(manifest).encode()), user=host, slug="bad")
    assert refused.value.message.startswith(message) and refused.value.field == setting, refused.value.message
    assert (Challenge.objects.count(), media_files(media)) == before


def test_a_bundle_whose_revealing_phase_has_closed_and_next_phase_is_ahead_is_imported(host, bob, media):
    """A challenge between its development phase (automatic reveal, closed) and its final phase (ahead) is
    not revealed; its bundle recreates it, the final phase after the first, without calling it revealed."""
    original = _phased(host)
    phase_update(phase=original.phases.get(name="main"), user=host, opens_at=days_ahead(-5), closes_at=days_ahead(-1))
    phase_update(phase=original.phases.get(name="main"), user=host, auto_reveal=True)
    data = bundle_export(challenge=original, user=host)
    copy = bundle_import(data=data, user=bob, slug="between-phases")
    assert_same_challenge(original, copy)


def _set(*keys):
    """A change to the manifest: the value at ``keys`` (a path of keys) set to the change's value."""

    def change(manifest, value):
        *path, last = keys
        for key in path:
            manifest = manifest[key]
        manifest[last] = value

    return change


def _drop(*keys):
    def change(manifest, value):
        *path, last = keys
        for key in path:
            manifest = manifest[key]
        del manifest[last]

    return change


@pytest.mark.parametrize(
    "change, value, message",
    [
        (_drop("dataset", "id_column"), None, "manifest.json: `dataset.id_column` must be a column name"),
        (_set("dataset", "id_column"), ["id"], "manifest.json: `dataset.id_column` must be a column name"),
        (_drop("dataset", "feature_columns"), None, "manifest.json: `dataset.feature_columns` must be a list of"),
        (_set("dataset", "feature_columns"), 5, "manifest.json: `dataset.feature_columns` must be a list of"),
        (_set("dataset", "public_ids"), 5, "manifest.json: `dataset.public_ids` must be a list of"),
        (_set("phases"), 5, "manifest.json: `phases` must be a list of objects"),
        (_set("phases"), ["final"], "manifest.json: `phases` must be a list of objects"),
        (_set("pages"), ["rules"], "manifest.json: `pages` must be an object"),
        (_set("slug"), ["copy"], "manifest.json: `slug` must be a text"),
    ],
)
def test_a_manifest_of_the_wrong_shape_is_a_400_naming_the_key_and_leaves_nothing(host, media, change, value, message):
    """A fault injector's manifests: each of these was a 500 (KeyError, TypeError, AttributeError from the
    import's reading of the manifest) or, for phases of strings, silently imported without its phases."""
    from rest_framework.test import APIClient

    data = bundle_export(challenge=_phased(host), user=host)
    manifest = json.loads(zipfile.ZipFile(io.BytesIO(data)).read("manifest.json"))
    change(manifest, value)
    bundle = _replaced(data, "manifest.json", json.dumps(manifest).encode())
    before = (Challenge.objects.count(), media_files(media))
    api = APIClient()
    api.force_authenticate(host)
    refused = api.post("/api/challenges/bundle/", {"bundle": SimpleUploadedFile("b.zip", bundle)}, format="multipart")
    assert refused.status_code == 400, refused.content[:300]
    assert refused.json()["detail"].startswith(message) and refused.json()["field"] == "bundle", refused.json()
    assert (Challenge.objects.count(), media_files(media)) == before
