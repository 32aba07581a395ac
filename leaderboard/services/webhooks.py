"""Signed webhooks for hosts: a challenge's events POSTed to a URL its host registered.

Each delivery is a JSON body POSTed with the headers

* ``Varboard-Event``: the event's kind (``submission.scored``, ``submission.failed``, ``board.revealed``);
* ``Varboard-Delivery``: the delivery's id (the same on every retry: receivers can deduplicate);
* ``Varboard-Signature``: ``t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>``, the
  scheme Stripe uses: the receiver recomputes the MAC over the timestamp and the raw body with the
  webhook's secret, compares in constant time and refuses old timestamps (replays).

Deliveries are made by a Celery task on the scoring queue (``tasks.notifications.deliver_webhook``),
never by a web request. A delivery is claimed for the length of one attempt, so a duplicate task
does nothing; a receiver that does not answer 2xx is tried again after RETRY_BASE_S, 2×, 4×, … up
to MAX_ATTEMPTS (``settings.WEBHOOKS``), then the delivery is marked failed. The connection
itself is made by ``webhook_http``: ambiguous URLs refused, the host resolved once per attempt,
every address checked public (at registration and again before every attempt) unless
``VARBOARD_WEBHOOK_ALLOW_PRIVATE``, the socket opened to exactly the checked address, no
redirects followed, and failures recorded as short public reasons ("could not connect",
"timed out", "HTTP 500", "address not allowed"), never the internal error text.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import time
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.db.models import Q
from django.utils import timezone

from ..models import Challenge, Webhook, WebhookDelivery
from ..selectors import user_is_host
from .dispatch import DELIVER_WEBHOOK, enqueue_on_commit
from .errors import NotAllowed, ServiceError
from .webhook_http import webhook_http_post, webhook_url_check

logger = logging.getLogger(__name__)

SIGNATURE_HEADER = "Varboard-Signature"
MAX_WEBHOOKS_PER_CHALLENGE = 10


def webhook_sign(*, secret: str, body: bytes, timestamp: int | None = None) -> str:
    """The ``Varboard-Signature`` header of ``body``: ``t=<timestamp>,v1=<HMAC-SHA256 hex of "t.body">``."""
    timestamp = int(time.time()) if timestamp is None else int(timestamp)
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def webhook_verify(*, secret: str, body: bytes, header: str, tolerance_s: float = 300) -> bool:
    """What a receiver does: True when ``header`` signs ``body`` with ``secret`` and is at most ``tolerance_s`` old."""
    try:
        parts = dict(item.split("=", 1) for item in header.split(","))
        timestamp = int(parts["t"])
    except (KeyError, ValueError):
        return False
    if abs(time.time() - timestamp) > tolerance_s:
        return False
    expected = webhook_sign(secret=secret, body=body, timestamp=timestamp).split("v1=", 1)[1]
    return hmac.compare_digest(expected, parts.get("v1", ""))


def webhook_create(*, challenge: Challenge, user: User, url: str) -> Webhook:
    """Register ``url`` for the challenge's events (hosts only); its secret is returned with it."""
    if not user_is_host(user=user, challenge=challenge):
        raise NotAllowed("Only the challenge's hosts can register webhooks.")
    url = (url or "").strip()
    if len(url) > 500:
        raise ServiceError("A webhook URL is at most 500 characters.", field="url")
    webhook_url_check(url)
    if challenge.webhooks.count() >= MAX_WEBHOOKS_PER_CHALLENGE:
        raise ServiceError(f"A challenge has at most {MAX_WEBHOOKS_PER_CHALLENGE} webhooks; delete one first.")
    return Webhook.objects.create(
        challenge=challenge, url=url, created_by=user, secret="whsec_" + secrets.token_urlsafe(32)
    )


def webhook_rotate_secret(*, webhook: Webhook, user: User) -> Webhook:
    """A new secret for the webhook (hosts only); deliveries from now on are signed with it."""
    if not user_is_host(user=user, challenge=webhook.challenge):
        raise NotAllowed("Only the challenge's hosts can change its webhooks.")
    webhook.secret = "whsec_" + secrets.token_urlsafe(32)
    webhook.save(update_fields=["secret"])
    return webhook


def webhook_delete(*, webhook: Webhook, user: User) -> None:
    if not user_is_host(user=user, challenge=webhook.challenge):
        raise NotAllowed("Only the challenge's hosts can delete its webhooks.")
    webhook.delete()


def deliveries_create(*, event, payload: dict) -> list[WebhookDelivery]:
    """One delivery per active webhook of the event's challenge whose author is still one of its hosts (a host
    removed keeps no channel to its events), each queued after commit."""
    created = []
    hosts = Challenge.hosts.through.objects.filter(challenge_id=event.challenge_id).values("user_id")
    hooks = Webhook.objects.filter(challenge_id=event.challenge_id, active=True).filter(
        Q(created_by__in=hosts) | Q(created_by__is_superuser=True)
    )
    for webhook in hooks:
        delivery, new = WebhookDelivery.objects.get_or_create(
            webhook=webhook, event=event, defaults={"payload": payload}
        )
        if new:
            enqueue_on_commit(DELIVER_WEBHOOK, delivery.pk)
            created.append(delivery)
    return created


def _claim(delivery_id: int) -> WebhookDelivery | None:
    """Take a pending delivery that is due for the length of one attempt; None when another has it or it is not due."""
    now = timezone.now()
    lease = now + timedelta(seconds=settings.WEBHOOKS["TIMEOUT_S"] + 60)
    claimed = WebhookDelivery.objects.filter(
        pk=delivery_id, status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=now
    ).update(next_attempt_at=lease)
    return WebhookDelivery.objects.select_related("webhook").get(pk=delivery_id) if claimed else None


def _post(delivery: WebhookDelivery) -> tuple[int | None, str]:
    """POST the delivery once: (HTTP status or None, error text or "")."""
    body = json.dumps(delivery.payload, sort_keys=True, separators=(",", ":")).encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "varboard-webhooks/1",
        "Varboard-Event": delivery.payload.get("event", ""),
        "Varboard-Delivery": str(delivery.pk),
        SIGNATURE_HEADER: webhook_sign(secret=delivery.webhook.secret, body=body),
    }
    return webhook_http_post(delivery.webhook.url, body=body, headers=headers, timeout=settings.WEBHOOKS["TIMEOUT_S"])


def webhook_deliver(*, delivery_id: int) -> str:
    """One attempt at a delivery: "delivered", "retrying" (queued again with backoff), "failed" or "skipped"."""
    delivery = _claim(delivery_id)
    if delivery is None:
        return "skipped"
    status, error = _post(delivery)
    delivery.attempts += 1
    delivery.response_status, delivery.last_error = status, error
    if not error:
        delivery.status, delivery.delivered_at = WebhookDelivery.Status.DELIVERED, timezone.now()
    elif delivery.attempts >= settings.WEBHOOKS["MAX_ATTEMPTS"]:
        delivery.status = WebhookDelivery.Status.FAILED
    else:
        delay = settings.WEBHOOKS["RETRY_BASE_S"] * 2 ** (delivery.attempts - 1)
        delivery.next_attempt_at = timezone.now() + timedelta(seconds=delay)
        enqueue_on_commit(DELIVER_WEBHOOK, delivery.pk, countdown=delay)
    delivery.save(
        update_fields=["attempts", "response_status", "last_error", "status", "delivered_at", "next_attempt_at"]
    )
    return "retrying" if delivery.status == WebhookDelivery.Status.PENDING else delivery.status


def webhook_delivery_give_up(delivery_id: int, *, reason: str) -> None:
    """The task failed for good (the platform's fault): mark the delivery failed.

    The cause is logged for the operators, not shown: the delivery list is read by hosts.
    """
    logger.warning("webhook delivery %s failed for good: %s", delivery_id, reason)
    WebhookDelivery.objects.filter(pk=delivery_id, status=WebhookDelivery.Status.PENDING).update(
        status=WebhookDelivery.Status.FAILED, last_error="the platform gave up"
    )
