"""Webhooks that cannot reach inside (issue 21, the "Webhook URL" row).

The attack: a host registers a webhook URL that the check's parser reads as a public address
while the HTTP client connects to the worker's loopback (``http://127.0.0.1:PORT\\@1.1.1.1/``),
or a name that resolves to a public address at registration and to 127.0.0.1 at delivery (DNS
rebinding); the delivery list (connection refused / timed out / HTTP status) then scans the
worker's network. Every test here runs with the default, refusing setting
(``VARBOARD_WEBHOOK_ALLOW_PRIVATE`` off) unless it says otherwise, and an internal service is a
real ``Listener`` on 127.0.0.1 that counts the connections made to it: it must count none.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import ssl
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from rest_framework.test import APIClient

from leaderboard.models import Event, Webhook, WebhookDelivery
from leaderboard.services import webhook_http
from leaderboard.services.errors import ServiceError
from leaderboard.services.webhook_http import address_is_public, webhook_url_parse
from leaderboard.services.webhooks import webhook_deliver, webhook_delivery_give_up
from tests.http_receiver import Listener, Receiver

from .factories import digits_challenge

pytestmark = pytest.mark.django_db

PUBLIC = "93.184.216.34"  # a global unicast address; never connected to: the tests patch the connect
NAME = "hooks.example.test"


@pytest.fixture(autouse=True)
def refusing(settings):
    """The default: private addresses refused, no proxy, one attempt per delivery."""
    settings.WEBHOOKS = {**settings.WEBHOOKS, "ALLOW_PRIVATE": False, "PROXY": "", "MAX_ATTEMPTS": 1, "TIMEOUT_S": 2.0}
    return settings


@pytest.fixture
def listener():
    server = Listener()
    yield server
    server.close()


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


@pytest.fixture
def resolver(monkeypatch):
    """``resolver.answers[name]``: the addresses each successive lookup of ``name`` gets (the last one repeats).

    Names not listed resolve as usual; ``resolver.calls`` counts the lookups of listed names.
    """
    real = socket.getaddrinfo

    class Resolver:
        answers: dict[str, list[list[str]]] = {}
        calls: list[str] = []

        def __call__(self, host, port, *args, **kwargs):
            if host not in self.answers:
                return real(host, port, *args, **kwargs)
            self.calls.append(host)
            queue = self.answers[host]
            addresses = queue.pop(0) if len(queue) > 1 else queue[0]
            return [
                (socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, int(port or 80)))
                for a in addresses
            ]

    fake = Resolver()
    fake.answers, fake.calls = {}, []
    monkeypatch.setattr(socket, "getaddrinfo", fake)
    return fake


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def post_hook(host, challenge, url: str):
    return api(host).post(f"/api/challenges/{challenge.slug}/webhooks/", {"url": url}, format="json")


def delivery_for(webhook: Webhook) -> WebhookDelivery:
    event = Event.objects.create(key=f"test:{webhook.pk}", kind="submission.scored", challenge=webhook.challenge)
    return WebhookDelivery.objects.create(webhook=webhook, event=event, payload={"event": "submission.scored"})


def deliver(webhook: Webhook) -> WebhookDelivery:
    delivery = delivery_for(webhook)
    webhook_deliver(delivery_id=delivery.pk)
    return WebhookDelivery.objects.get(pk=delivery.pk)


# ------------------------------------------------------------------ URL forms refused at registration

AMBIGUOUS = [
    ("http://127.0.0.1:{port}\\@1.1.1.1/", "may not contain backslashes"),
    ("http://1.1.1.1\\@127.0.0.1:{port}/", "may not contain backslashes"),
    ("http://127.0.0.1:{port}@1.1.1.1/", "may not contain user info"),
    ("http://user:pw@example.org/", "may not contain user info"),
    ("http://example.org@127.0.0.1:{port}/", "may not contain user info"),
    ("http://2130706433:{port}/", "non-canonical IPv4"),
    ("http://0x7f.1:{port}/", "non-canonical IPv4"),
    ("http://0x7f000001:{port}/", "non-canonical IPv4"),
    ("http://127.1:{port}/", "non-canonical IPv4"),
    ("http://0177.0.0.1:{port}/", "non-canonical IPv4"),
    ("http://1.1.1.1.:{port}/", "ends with a dot"),
    ("http://%31%32%37.0.0.1:{port}/", "percent-encoded host"),
    ("http://[::ffff:127.0.0.1]:{port}/", "non-canonical form"),
    ("http://[0:0:0:0:0:0:0:1]:{port}/", "non-canonical form"),
    ("http://[::1%25lo]:{port}/", "percent-encoded host"),
    ("http://exa mple.org/", "whitespace or control characters"),
    ("http://example.org/\r\nX-Injected: 1", "whitespace or control characters"),
    ("http://exämple.org/", "must be ASCII"),
    ("http:///hook", "has no host"),
    ("http://:{port}/", "has no host"),
    ("http://example.org:0/", "a port is a number from 1 to 65535"),
    ("http://example.org:65536/", "a port is a number from 1 to 65535"),
    ("http://example.org:08/", "a port is a number from 1 to 65535"),
    ("http://example.org:80:81/", "a port is a number from 1 to 65535"),
    ("ftp://example.org/", "must start with http:// or https://"),
    ("gopher://127.0.0.1:{port}/", "must start with http:// or https://"),
    ("file:///etc/passwd", "must start with http:// or https://"),
    ("http:example.org", "must start with http:// or https://"),
    ("http://exa_mple.org/", "not a valid host name"),
]


@pytest.mark.parametrize("url,problem", AMBIGUOUS)
def test_an_ambiguous_url_is_refused_through_the_api_with_the_problem_named(host, listener, url, problem):
    challenge, _ = digits_challenge(host)
    answer = post_hook(host, challenge, url.format(port=listener.port))
    assert answer.status_code == 400, answer.content
    assert problem in answer.json()["detail"]
    assert not Webhook.objects.exists()
    assert listener.connections() == 0


@pytest.mark.parametrize("url,problem", AMBIGUOUS)
def test_ambiguous_urls_are_refused_even_where_private_addresses_are_allowed(refusing, url, problem):
    refusing.WEBHOOKS = {**refusing.WEBHOOKS, "ALLOW_PRIVATE": True}
    with pytest.raises(ServiceError, match="The webhook URL") as refused:
        webhook_url_parse(url.format(port=8000))
    assert problem in refused.value.message


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:{port}/",
        "http://[::1]:{port}/",
        "http://10.0.0.5/",
        "http://169.254.169.254/latest/meta-data/",
        "http://100.64.0.1/",
        "http://0.0.0.0:{port}/",
        "http://224.0.0.1/",
        "http://240.0.0.1/",
        "http://192.0.2.1/",
        "http://[::ffff:7f00:1]:{port}/",
        "http://[64:ff9b::7f00:1]:{port}/",
        "http://[2002:7f00:1::]:{port}/",
        "http://[fe80::1]/",
        "http://[fc00::1]/",
        "http://[fec0::1]:6379/",
        "http://localhost:{port}/",
    ],
)
def test_a_private_address_or_a_name_for_one_is_refused(host, listener, url):
    challenge, _ = digits_challenge(host)
    answer = post_hook(host, challenge, url.format(port=listener.port))
    assert answer.status_code == 400
    detail = answer.json()["detail"]
    assert (
        "localhost does not resolve to a public address" if "localhost" in url else "loopback, private or reserved"
    ) in detail
    assert listener.connections() == 0


@pytest.mark.parametrize(
    "address,public",
    [
        ("1.1.1.1", True),
        ("2606:4700:4700::1111", True),
        ("64:ff9b::101:101", True),
        ("127.0.0.1", False),
        ("10.1.2.3", False),
        ("172.16.0.1", False),
        ("192.168.1.1", False),
        ("100.64.0.1", False),
        ("169.254.169.254", False),
        ("0.0.0.0", False),
        ("255.255.255.255", False),
        ("224.0.0.251", False),
        ("198.18.0.1", False),
        ("203.0.113.7", False),
        ("::", False),
        ("::1", False),
        ("::ffff:10.0.0.1", False),
        ("::127.0.0.1", False),
        ("2002:a00:1::", False),
        ("64:ff9b::a00:1", False),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", False),
        ("fd00::1", False),
        ("fe80::1", False),
        ("fec0::1", False),  # site-local (RFC 3879): ipaddress calls it global
        ("ff02::1", False),
        ("2001:db8::1", False),
        ("192.0.0.8", False),  # IETF protocol assignments: ipaddress calls it global
        ("3fff::1", False),  # documentation (RFC 9637): ipaddress calls it global
        ("192.0.1.1", True),
    ],
)
def test_address_is_public_sees_through_ipv6_forms_of_private_ipv4(address, public):
    assert address_is_public(ipaddress.ip_address(address)) is public


def test_a_name_resolving_to_loopback_or_to_any_private_address_is_refused(host, resolver):
    challenge, _ = digits_challenge(host)
    resolver.answers[NAME] = [["127.0.0.1"]]
    detail = post_hook(host, challenge, f"http://{NAME}/h").json()["detail"]
    assert f"{NAME} does not resolve to a public address" in detail
    assert "127.0.0.1" not in detail  # the resolved address is not echoed: no map of the worker's network
    resolver.answers["mixed.example.test"] = [[PUBLIC, "10.0.0.7"]]
    answer = post_hook(host, challenge, "https://mixed.example.test/h")
    assert answer.status_code == 400 and "does not resolve to a public address" in answer.json()["detail"]
    assert "10.0.0.7" not in answer.json()["detail"]
    assert not Webhook.objects.exists()


def test_a_name_that_does_not_resolve_gets_the_answer_a_private_one_gets(host, resolver, monkeypatch):
    """Two answers ("cannot be resolved", "resolves to a private address") told a host which internal names
    exist (an attacker's finding): one answer for both, the name's status only."""
    challenge, _ = digits_challenge(host)
    real = socket.getaddrinfo

    def unknown(name, *args, **kwargs):
        if name == "nowhere.example.test":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", unknown)
    resolver.answers["private.example.test"] = [["10.0.0.7"]]
    details = [
        post_hook(host, challenge, f"http://{name}/h").json()["detail"]
        for name in ("nowhere.example.test", "private.example.test")
    ]
    assert [d.replace("nowhere", "private") for d in details[:1]] == details[1:]
    assert "does not resolve to a public address" in details[0] and not Webhook.objects.exists()


# ------------------------------------------------------------------ delivery: resolve once, connect to it


def test_the_attack_url_stored_before_these_rules_never_connects_to_loopback(host, listener):
    """A webhook row that predates the checks is checked again at delivery: nothing reaches the listener."""
    challenge, _ = digits_challenge(host)
    urls = [
        f"http://127.0.0.1:{listener.port}\\@1.1.1.1/",
        f"http://127.0.0.1:{listener.port}@1.1.1.1/",
        f"http://2130706433:{listener.port}/",
        f"http://localhost:{listener.port}/",
        f"http://[::ffff:7f00:1]:{listener.port}/",
    ]
    outcomes = []
    for url in urls:
        webhook = Webhook.objects.create(challenge=challenge, url=url, created_by=host, secret="whsec_x")
        delivery = deliver(webhook)
        outcomes.append((delivery.status, delivery.last_error))
        webhook.delete()
    assert outcomes == [("failed", "URL not allowed")] * 3 + [("failed", "address not allowed")] * 2
    assert listener.connections() == 0


def test_dns_rebinding_to_loopback_at_delivery_never_connects_to_it(host, resolver, listener):
    challenge, _ = digits_challenge(host)
    resolver.answers[NAME] = [[PUBLIC], ["127.0.0.1"]]  # public when checked at registration, loopback after
    created = post_hook(host, challenge, f"http://{NAME}:{listener.port}/h")
    assert created.status_code == 201
    delivery = deliver(Webhook.objects.get())
    assert (delivery.status, delivery.last_error, delivery.response_status) == ("failed", "address not allowed", None)
    assert listener.connections() == 0


def test_a_name_that_stops_resolving_fails_its_delivery_as_a_private_one_does(host, resolver, monkeypatch):
    """A reviewer's finding: a delivery's reason still told "could not resolve the host" from "address not
    allowed", so a name re-pointed after registration mapped which internal names exist."""
    challenge, _ = digits_challenge(host)
    resolver.answers[NAME] = [[PUBLIC]]
    assert post_hook(host, challenge, f"http://{NAME}/h").status_code == 201
    real = socket.getaddrinfo

    def gone(name, *args, **kwargs):
        if name == NAME:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", gone)
    delivery = deliver(Webhook.objects.get())
    assert (delivery.status, delivery.last_error) == ("failed", "address not allowed")


def test_the_connection_goes_to_the_checked_address_with_the_name_in_the_host_header(
    host, resolver, receiver, listener, monkeypatch
):
    """One lookup per attempt; the socket is opened to the address that lookup returned and checked.

    The name is public for the lookups at registration and at delivery and loopback for any later
    one (a client that resolves again would connect to the listener). The public address is
    played by the receiver: connecting to (PUBLIC, port) is routed to it, and recorded.
    """
    challenge, _ = digits_challenge(host)
    resolver.answers[NAME] = [[PUBLIC], [PUBLIC], ["127.0.0.1"]]
    real_connect, targets = socket.create_connection, []

    def connect(address, *args, **kwargs):
        targets.append(address)
        if address[0] == PUBLIC:
            return real_connect(("127.0.0.1", receiver.port), *args, **kwargs)
        return real_connect(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", connect)
    assert post_hook(host, challenge, f"http://{NAME}:{listener.port}/h?x=1").status_code == 201
    delivery = deliver(Webhook.objects.get())
    assert (delivery.status, delivery.response_status, delivery.last_error) == ("delivered", 204, "")
    assert targets == [(PUBLIC, listener.port)] and resolver.calls == [NAME, NAME]
    ((headers, _),) = receiver.requests
    assert headers["Host"] == f"{NAME}:{listener.port}" and receiver.paths == ["/h?x=1"]
    assert listener.connections() == 0


def test_a_redirect_is_not_followed(refusing, host, receiver, listener):
    refusing.WEBHOOKS = {**refusing.WEBHOOKS, "ALLOW_PRIVATE": True}  # the receiver is on 127.0.0.1
    challenge, _ = digits_challenge(host)
    receiver.statuses, receiver.location = [302], f"http://127.0.0.1:{listener.port}/internal"
    assert post_hook(host, challenge, receiver.url).status_code == 201
    delivery = deliver(Webhook.objects.get())
    assert delivery.status == "failed" and delivery.response_status == 302
    assert delivery.last_error == "HTTP 302 (redirects are not followed)"
    assert len(receiver.requests) == 1 and listener.connections() == 0


# ------------------------------------------------------------------ what the delivery list shows

INTERNAL = ("refused", "Errno", "Error", "127.0.0.1", "Connection", "Traceback", "socket", "port")


def test_failures_are_listed_with_a_public_reason_only(refusing, host, listener):
    refusing.WEBHOOKS = {**refusing.WEBHOOKS, "ALLOW_PRIVATE": True, "TIMEOUT_S": 0.5}
    challenge, _ = digits_challenge(host)
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()  # nothing listens there: connection refused
    api_host = api(host)
    reasons = {}
    for name, url in (("closed", f"http://127.0.0.1:{closed_port}/"), ("silent", f"http://127.0.0.1:{listener.port}/")):
        webhook = Webhook.objects.get(pk=post_hook(host, challenge, url).json()["id"])
        deliver(webhook)
        listed = api_host.get(f"/api/challenges/{challenge.slug}/webhooks/{webhook.pk}/").json()["results"]
        (row,) = listed if isinstance(listed, list) else listed["deliveries"]
        reasons[name] = row["last_error"]
    assert reasons == {"closed": "could not connect", "silent": "timed out"}
    page = APIClient()
    page.force_login(host)
    html = page.get(f"/c/{challenge.slug}/webhooks/").content.decode()
    assert "could not connect" in html and "timed out" in html
    assert not any(word in html.split("<tbody", 1)[-1] for word in ("Errno", "refused", "Traceback"))
    for reason in reasons.values():
        assert not any(word.lower() in reason.lower() for word in INTERNAL)


def test_a_delivery_the_platform_gave_up_on_hides_the_cause(host, receiver):
    challenge, _ = digits_challenge(host)
    webhook = Webhook.objects.create(
        challenge=challenge, url="https://example.org/h", created_by=host, secret="whsec_x"
    )
    delivery = delivery_for(webhook)
    webhook_delivery_give_up(delivery.pk, reason="OperationalError: connection to 10.0.0.3:5432 refused")
    delivery.refresh_from_db()
    assert (delivery.status, delivery.last_error) == ("failed", "the platform gave up")


# ------------------------------------------------------------------ an egress proxy


def test_with_a_proxy_names_are_left_to_it_and_private_literals_still_refused(
    refusing, host, receiver, resolver, listener
):
    refusing.WEBHOOKS = {**refusing.WEBHOOKS, "PROXY": f"http://127.0.0.1:{receiver.port}"}
    challenge, _ = digits_challenge(host)
    answer = post_hook(host, challenge, f"http://127.0.0.1:{listener.port}/")
    assert answer.status_code == 400 and "loopback, private or reserved" in answer.json()["detail"]
    assert post_hook(host, challenge, f"http://127.0.0.1:{listener.port}\\@1.1.1.1/").status_code == 400
    resolver.answers[NAME] = [["127.0.0.1"]]  # would be refused if resolved here: the proxy resolves it
    assert post_hook(host, challenge, f"http://{NAME}/hooks?a=b").status_code == 201
    delivery = deliver(Webhook.objects.get())
    assert (delivery.status, delivery.response_status) == ("delivered", 204)
    assert resolver.calls == [] and receiver.paths == [f"http://{NAME}/hooks?a=b"]
    assert receiver.requests[0][0]["Host"] == NAME
    assert listener.connections() == 0


# ------------------------------------------------------------------ https: SNI and certificate use the name


def _certificate(tmp_path, name: str) -> tuple[str, str]:
    """A self-signed certificate for ``name`` and its key, as PEM files (cert path, key path)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / f"{name}.pem", tmp_path / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return str(cert_path), str(key_path)


@pytest.mark.parametrize(
    "certified_name,outcome", [(NAME, ("delivered", 204, "")), ("other.example.test", ("failed", None, "TLS error"))]
)
def test_https_is_pinned_to_the_checked_address_with_sni_and_certificate_for_the_name(
    host, resolver, receiver, monkeypatch, tmp_path, certified_name, outcome
):
    cert, key = _certificate(tmp_path, certified_name)
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert, key)
    sni = []
    server_context.sni_callback = lambda sock, name, context: sni.append(name)
    receiver.server.socket = server_context.wrap_socket(receiver.server.socket, server_side=True)
    monkeypatch.setattr(webhook_http, "_tls_context", lambda: ssl.create_default_context(cafile=cert))
    real_connect = socket.create_connection
    monkeypatch.setattr(
        socket,
        "create_connection",
        lambda address, *a, **k: real_connect(
            ("127.0.0.1", receiver.port) if address[0] == PUBLIC else address, *a, **k
        ),
    )
    resolver.answers[NAME] = [[PUBLIC], [PUBLIC], ["127.0.0.1"]]
    challenge, _ = digits_challenge(host)
    assert post_hook(host, challenge, f"https://{NAME}:{receiver.port}/h").status_code == 201
    delivery = deliver(Webhook.objects.get())
    assert (delivery.status, delivery.response_status, delivery.last_error) == outcome
    assert sni[:1] == [NAME] and resolver.calls == [NAME, NAME]
    if outcome[0] == "delivered":
        assert receiver.requests[0][0]["Host"] == f"{NAME}:{receiver.port}"


@pytest.mark.parametrize(
    "proxy,accepted",
    [
        ("http://proxy.internal:3128", True),
        ("socks5://proxy:1080", False),
        ("http://user@proxy:3128", False),
        ("http://proxy", False),
    ],
)
def test_the_proxy_setting_must_be_http_host_port(proxy, accepted):
    env = {**os.environ, "VARBOARD_WEBHOOK_PROXY": proxy, "DJANGO_SETTINGS_MODULE": "leaderboard.settings"}
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"], env=env, capture_output=True, text=True, timeout=120
    )
    assert (done.returncode == 0) is accepted, done.stderr[-2000:]
    if not accepted:
        assert f"VARBOARD_WEBHOOK_PROXY must be http://host:port, not {proxy!r}" in done.stderr


def test_the_webhooks_page_refuses_the_attack_url_too(client, host, listener):
    challenge, _ = digits_challenge(host)
    client.force_login(host)
    for url, problem in (
        (f"http://127.0.0.1:{listener.port}\\@1.1.1.1/", "may not contain backslashes"),
        (f"http://localhost:{listener.port}/", "does not resolve to a public address"),
    ):
        page = client.post(f"/c/{challenge.slug}/webhooks/", {"action": "create", "url": url}, follow=True)
        assert page.status_code == 200 and not challenge.webhooks.exists()
        assert problem in page.content.decode()
    assert listener.connections() == 0


class ConnectProxy:
    """A minimal HTTP CONNECT proxy on 127.0.0.1 that tunnels every request to ``upstream`` (a local port)."""

    def __init__(self, upstream: int):
        self.requests: list[str] = []
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self._upstream = upstream
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        try:
            client, _ = self._sock.accept()
        except OSError:
            return
        head = b""
        while b"\r\n\r\n" not in head:
            head += client.recv(4096)
        self.requests.append(head.split(b"\r\n", 1)[0].decode())
        upstream = socket.create_connection(("127.0.0.1", self._upstream))
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")

        def pipe(source, sink):
            try:
                while data := source.recv(65536):
                    sink.sendall(data)
            except OSError:
                pass
            finally:
                sink.close()

        threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()
        pipe(client, upstream)

    def close(self):
        self._sock.close()
        self._thread.join(timeout=5)


def test_https_through_the_proxy_tunnels_to_the_name_unresolved_here(
    refusing, host, resolver, receiver, monkeypatch, tmp_path
):
    cert, key = _certificate(tmp_path, NAME)
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert, key)
    sni = []
    server_context.sni_callback = lambda sock, name, context: sni.append(name)
    receiver.server.socket = server_context.wrap_socket(receiver.server.socket, server_side=True)
    monkeypatch.setattr(webhook_http, "_tls_context", lambda: ssl.create_default_context(cafile=cert))
    proxy = ConnectProxy(receiver.port)
    try:
        refusing.WEBHOOKS = {**refusing.WEBHOOKS, "PROXY": f"http://127.0.0.1:{proxy.port}"}
        resolver.answers[NAME] = [["127.0.0.1"]]  # would be refused if resolved here: the proxy resolves it
        challenge, _ = digits_challenge(host)
        assert post_hook(host, challenge, f"https://{NAME}/h").status_code == 201
        delivery = deliver(Webhook.objects.get())
    finally:
        proxy.close()
    assert (delivery.status, delivery.response_status, delivery.last_error) == ("delivered", 204, "")
    assert proxy.requests == [f"CONNECT {NAME}:443 HTTP/1.0"] and sni == [NAME] and resolver.calls == []
    assert receiver.requests[0][0]["Host"] == NAME and receiver.paths == ["/h"]
