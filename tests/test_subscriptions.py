"""Subscriptions as the app keeps them (rlark_tui.intents.Intents) and the topic read they choose (polls.Topic): one
HEALTH topic read in brief by the job list and in detail while the job detail also asks."""

from __future__ import annotations

from rlark_tui.flow.polls import HEALTH, TOPICS, fetch_health, fetch_health_detail
from rlark_tui.flow.services import Intents


class Recorder:
    """Stands in for the Reconciler's subscription calls (our own interface, not a client library)."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def subscribe(self, topic: str, key: str, *, detail: bool = False) -> None:
        self.calls.append(("subscribe", topic, key, detail))

    def unsubscribe(self, topic: str, key: str) -> None:
        self.calls.append(("unsubscribe", topic, key))


def test_health_is_read_in_brief_every_10_s_and_in_detail_every_3_s():
    topic = TOPICS[HEALTH]
    assert topic.read(False) == (fetch_health, 10.0)
    assert topic.read(True) == (fetch_health_detail, 3.0)
    assert TOPICS["ray"].read(True) == TOPICS["ray"].read(False)


def test_detail_is_asked_while_any_subscriber_wants_it_and_dropped_after():
    intents, reconciler = Intents(), Recorder()
    intents.attach(reconciler)
    intents.subscribe(HEALTH, "job-a")
    intents.subscribe(HEALTH, "job-a", detail=True)
    intents.subscribe(HEALTH, "job-a", detail=True)
    intents.unsubscribe(HEALTH, "job-a", detail=True)
    assert reconciler.calls == [("subscribe", HEALTH, "job-a", False), ("subscribe", HEALTH, "job-a", True)]
    intents.unsubscribe(HEALTH, "job-a", detail=True)
    assert reconciler.calls[-1] == ("subscribe", HEALTH, "job-a", False)
    intents.unsubscribe(HEALTH, "job-a")
    assert reconciler.calls[-1] == ("unsubscribe", HEALTH, "job-a")
    intents.subscribe(HEALTH, "job-b", detail=True)
    later = Recorder()
    intents.attach(later)
    assert later.calls == [("subscribe", HEALTH, "job-b", True)]
