"""Notifications: an event's mails and webhook deliveries (leaderboard/services/notifications.py, webhooks.py).

Both run on the scoring queue. ``deliver_webhook`` makes one attempt; the service queues the next
one itself with its backoff, so the attempts are counted in the database, not in the broker.
"""

from leaderboard.services.notifications import event_process
from leaderboard.services.webhooks import webhook_deliver, webhook_delivery_give_up

from . import platform_task


@platform_task(name="tasks.notifications.process_event")
def process_event(event_id: int) -> int:
    """Mail the event's recipients and create its webhook deliveries."""
    return event_process(event_id=event_id)


@platform_task(name="tasks.notifications.deliver_webhook", give_up=webhook_delivery_give_up)
def deliver_webhook(delivery_id: int) -> str:
    """One signed POST of a webhook delivery."""
    return webhook_deliver(delivery_id=delivery_id)
