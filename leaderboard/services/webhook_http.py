"""Outbound HTTP for webhooks that cannot reach inside the platform's network (issue 21).

A webhook URL is a request from a host to make the platform's workers open a connection, so
three things are checked, in this order:

1. **The URL is unambiguous** (``webhook_url_parse``): http or https, ASCII, no whitespace or
   control characters, no backslash, no user info, no percent-encoded host, a port in 1..65535,
   and a host that is a DNS name, a canonical dotted-quad IPv4 address (``127.1``, ``2130706433``
   and ``0x7f.1`` are refused: parsers disagree on them) or a canonical bracketed IPv6 address.
   Two parsers can then not see two different hosts (``http://127.0.0.1:6379\\@1.1.1.1/``).
2. **Every address the host resolves to is public** (``address_is_public``): not loopback,
   private, link-local, multicast, reserved, unspecified, shared (100.64/10), documentation or
   benchmarking ranges, and not an IPv6 form that embeds such an IPv4 address (IPv4-mapped,
   IPv4-compatible, 6to4, Teredo, NAT64).
3. **The connection goes to exactly the address that was checked**: the name is resolved once
   per attempt and the socket is opened to that IP; the Host header, SNI and certificate check
   use the name. No second resolution (DNS rebinding), no redirects followed (``http.client``
   follows none).

With ``VARBOARD_WEBHOOK_PROXY`` the egress proxy resolves names: literal private IPs and
ambiguous URLs are still refused here. ``VARBOARD_WEBHOOK_ALLOW_PRIVATE`` (tests and closed
networks only) skips step 2, never step 1.

Failures are returned as short public reasons ("could not connect", "timed out", "HTTP 500",
"address not allowed"): the delivery list must not become a window on the worker's network.
"""

from __future__ import annotations

import http.client
import ipaddress
import re
import socket
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

from .errors import ServiceError

_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
_NUMERIC_LAST_LABEL = re.compile(r"(?:[0-9]+|0x[0-9a-f]*)")
_IPV6_NETLOC = re.compile(r"\[([^\]]*)\](?::(.*))?")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
#: Not routable, though ``ipaddress`` (3.11) calls them global: the rest of the IETF protocol assignments
#: (RFC 6890; 192.0.0.9 and .10 are anycast services a webhook has no business reaching either) and the
#: IPv6 documentation range of RFC 9637.
_NOT_PUBLIC = (ipaddress.ip_network("192.0.0.0/24"), ipaddress.ip_network("3fff::/20"))
_MAX_RESPONSE_BYTES = 65536


class AddressNotAllowed(ServiceError):
    """The host is, or resolves to, a non-public address."""


class HostNotResolved(ServiceError):
    """The host name does not resolve."""


@dataclass(frozen=True)
class WebhookTarget:
    """A checked webhook URL: ``host`` lower-case (an IPv6 literal without brackets), ``path`` with its query."""

    scheme: str
    host: str
    port: int
    path: str
    is_ip: bool

    @property
    def netloc(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"


def _url_fail(problem: str) -> ServiceError:
    return ServiceError(f"The webhook URL {problem}.", field="url")


def _check_characters(url: str) -> None:
    if not url:
        raise _url_fail("is empty")
    if any(ord(c) < 33 or ord(c) == 127 for c in url):
        raise _url_fail("may not contain whitespace or control characters")
    if not url.isascii():
        raise _url_fail("must be ASCII (write an international host name in its xn-- form and percent-encode the path)")
    if "\\" in url:
        raise _url_fail("may not contain backslashes")


def _split_netloc(netloc: str) -> tuple[str, str | None, bool]:
    """(host, port text or None, is an IPv6 literal) of a netloc without user info."""
    if netloc.startswith("["):
        match = _IPV6_NETLOC.fullmatch(netloc)
        if match is None:
            raise _url_fail("has a malformed [IPv6] host")
        return match.group(1), match.group(2), True
    host, colon, port = netloc.partition(":")
    return host, (port if colon else None), False


def _check_port(port: str | None, scheme: str) -> int:
    if port is None:
        return 443 if scheme == "https" else 80
    if not port.isdigit() or not 1 <= int(port) <= 65535 or port != str(int(port)):
        raise _url_fail(f"has port {port!r}: a port is a number from 1 to 65535 (no leading zeros)")
    return int(port)


def _check_host(host: str, ipv6: bool) -> bool:
    """Validate a host (lower-cased); True when it is an IP literal."""
    if ipv6:
        try:
            address = ipaddress.IPv6Address(host)
        except ValueError:
            raise _url_fail(f"has [{host}], which is not an IPv6 address") from None
        if str(address) != host:
            raise _url_fail(f"has the IPv6 address [{host}] in a non-canonical form: write [{address}]")
        return True
    if not host:
        raise _url_fail("has no host")
    if host.endswith("."):
        raise _url_fail(f"has the host {host!r}, which ends with a dot: write it without")
    labels = host.split(".")
    if _NUMERIC_LAST_LABEL.fullmatch(labels[-1]):  # what a URL parser reads as an IPv4 address
        try:
            address = ipaddress.IPv4Address(host)
        except ValueError:
            address = None
        if address is None or str(address) != host:
            raise _url_fail(
                f"has the host {host!r}, a non-canonical IPv4 form: write an IPv4 address as "
                "four decimal numbers (like 93.184.216.34)"
            )
        return True
    if len(host) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        raise _url_fail(f"has the host {host!r}, which is not a valid host name")
    return False


def webhook_url_parse(url: str) -> WebhookTarget:
    """Check that ``url`` names one host unambiguously; a ``ServiceError`` naming the problem otherwise."""
    if not isinstance(url, str):
        raise _url_fail("must be a string")
    _check_characters(url)
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in ("http", "https"):
        raise _url_fail("must start with http:// or https://")
    parts = urlsplit(url)
    netloc = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    if netloc != parts.netloc:
        raise _url_fail("has a host that parsers read differently")
    if "@" in netloc:
        raise _url_fail("may not contain user info (user@host)")
    if "%" in netloc:
        raise _url_fail("may not have a percent-encoded host")
    host, port_text, ipv6 = _split_netloc(netloc)
    host = host.lower()
    is_ip = _check_host(host, ipv6)
    port = _check_port(port_text, scheme.lower())
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return WebhookTarget(scheme=scheme.lower(), host=host, port=port, path=path, is_ip=is_ip)


def address_is_public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """True when ``address`` is a globally routable unicast address, IPv4 forms embedded in IPv6 included."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address_is_public(address.ipv4_mapped)
        if address.sixtofour is not None:
            return address_is_public(address.sixtofour)
        if address in _NAT64:
            return address_is_public(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
        if address.teredo is not None or int(address) < 2**32:  # Teredo; ::/96 (IPv4-compatible, ::1, ::)
            return False
        if address.is_site_local:  # fec0::/10, deprecated (RFC 3879) but still routed inside some networks
            return False
    if any(address in network for network in _NOT_PUBLIC if network.version == address.version):
        return False
    return address.is_global and not (
        address.is_multicast
        or address.is_reserved
        or address.is_loopback
        or address.is_link_local
        or address.is_private
        or address.is_unspecified
    )


def _allow_private() -> bool:
    return bool(settings.WEBHOOKS["ALLOW_PRIVATE"])


#: A name refused, whether it resolves to a private address or to none: the two answers told a host which
#: internal names exist (``postgres``, ``redis``), a map of the worker's network. Its address is not echoed.
_NAME_REFUSED = "The webhook host {host} does not resolve to a public address: webhooks go to public addresses only."


def _refuse(host: str, address) -> AddressNotAllowed:
    """The refusal of a literal address, or of a name (:data:`_NAME_REFUSED`)."""
    if str(address) != host:
        return AddressNotAllowed(_NAME_REFUSED.format(host=host), field="url")
    return AddressNotAllowed(
        f"The webhook host {host} is an address on a loopback, private or reserved network: "
        "webhooks go to public addresses only.",
        field="url",
    )


def webhook_target_resolve(target: WebhookTarget) -> list[str]:
    """The addresses to connect to, each checked (all of them: one private address refuses the URL).

    With a proxy configured, names are left to the proxy ([]); literal IPs are still checked.
    """
    if target.is_ip:
        address = ipaddress.ip_address(target.host)
        if not _allow_private() and not address_is_public(address):
            raise _refuse(target.host, address)
        return [target.host]
    if settings.WEBHOOKS.get("PROXY"):
        return []
    try:
        infos = socket.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise HostNotResolved(_NAME_REFUSED.format(host=target.host), field="url") from None
    addresses = list(dict.fromkeys(info[4][0] for info in infos))
    for text in addresses:
        address = ipaddress.ip_address(text.split("%")[0])
        if "%" in text or (not _allow_private() and not address_is_public(address)):
            raise _refuse(target.host, address)
    if not addresses:
        raise HostNotResolved(_NAME_REFUSED.format(host=target.host), field="url")
    return addresses


def webhook_url_check(url: str) -> WebhookTarget:
    """Registration: the URL is unambiguous and its host resolves to public addresses only."""
    target = webhook_url_parse(url)
    webhook_target_resolve(target)
    return target


class _PinnedHTTP(http.client.HTTPConnection):
    """HTTP to ``host`` (Host header) over a socket opened to ``address`` (the checked IP)."""

    def __init__(self, host: str, port: int, *, address: str, timeout: float):
        super().__init__(host, port, timeout=timeout)
        self._address = address

    def connect(self):
        self.sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _PinnedHTTPS(http.client.HTTPSConnection):
    """HTTPS to ``host`` (Host header, SNI, certificate name) over a socket opened to ``address``."""

    def __init__(self, host: str, port: int, *, address: str, timeout: float, context: ssl.SSLContext):
        super().__init__(host, port, timeout=timeout, context=context)
        self._address = address

    def connect(self):
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


def _tls_context() -> ssl.SSLContext:
    try:
        import certifi

        return ssl.create_default_context(cafile=certifi.where())
    except ImportError:  # pragma: no cover - certifi comes with requests
        return ssl.create_default_context()


def _proxy_connection(target: WebhookTarget, timeout: float) -> tuple[http.client.HTTPConnection, str]:
    """A connection through ``VARBOARD_WEBHOOK_PROXY`` and the request target to send on it."""
    proxy = urlsplit(settings.WEBHOOKS["PROXY"])
    if target.scheme == "https":
        connection = http.client.HTTPSConnection(
            proxy.hostname, proxy.port or 80, timeout=timeout, context=_tls_context()
        )
        connection.set_tunnel(target.host, target.port)
        return connection, target.path
    connection = http.client.HTTPConnection(proxy.hostname, proxy.port or 80, timeout=timeout)
    return connection, f"http://{target.netloc}{target.path}"


def _connections(target: WebhookTarget, timeout: float):
    """The connections to try, in order: one per checked address (or one through the proxy)."""
    addresses = webhook_target_resolve(target)
    if not addresses:
        yield _proxy_connection(target, timeout)
        return
    for address in addresses:
        if target.scheme == "https":
            yield (
                _PinnedHTTPS(target.host, target.port, address=address, timeout=timeout, context=_tls_context()),
                target.path,
            )
        else:
            yield _PinnedHTTP(target.host, target.port, address=address, timeout=timeout), target.path


def _public_reason(exc: BaseException) -> str:
    if isinstance(exc, (AddressNotAllowed, HostNotResolved)):  # one answer: which names exist stays unsaid
        return "address not allowed"
    if isinstance(exc, ServiceError):
        return "URL not allowed"
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return "timed out"
    if isinstance(exc, (ssl.SSLError, ssl.CertificateError)):
        return "TLS error"
    if isinstance(exc, http.client.HTTPException):
        return "invalid HTTP response"
    return "could not connect"


def _send(connection: http.client.HTTPConnection, request_target: str, body: bytes, headers: dict) -> int:
    try:
        connection.request("POST", request_target, body=body, headers=headers)
        response = connection.getresponse()
        response.read(_MAX_RESPONSE_BYTES)
        return response.status
    finally:
        connection.close()


def webhook_http_post(url: str, *, body: bytes, headers: dict, timeout: float) -> tuple[int | None, str]:
    """POST ``body`` to ``url`` once: (HTTP status or None, public failure reason or "").

    The URL is checked again (it may predate these rules), its host resolved once, and each
    checked address tried in turn until one accepts the connection. Redirects are not followed:
    a 3xx is a failure like any other non-2xx answer.
    """
    status, error = None, "could not connect"
    try:
        for connection, request_target in _connections(webhook_url_parse(url), timeout):
            try:
                status = _send(connection, request_target, body, headers)
                break
            except ConnectionError as exc:  # refused or reset: the next checked address, if any
                error = _public_reason(exc)
    except (ServiceError, OSError, http.client.HTTPException, ValueError) as exc:
        return None, _public_reason(exc)
    if status is None:
        return None, error
    if 200 <= status < 300:
        return status, ""
    if 300 <= status < 400:
        return status, f"HTTP {status} (redirects are not followed)"
    return status, f"HTTP {status}"
