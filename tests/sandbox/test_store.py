"""Store and log storage in-process: persistence across restarts, resourceVersions, finalizers, garbage
collection, watch history and the subscription API the agent uses; log instances and follow."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest

from rlark_sandbox.logs import LogsNotFound, LogStore
from rlark_sandbox.store import AlreadyExists, Conflict, Gone, NotFound, StateError, Store
from tests.streams import sent_all


def test_objects_and_counter_survive_a_restart(tmp_path):
    store = Store(tmp_path)
    job = store.create("jobs", {"metadata": {"name": "j1"}, "spec": {"stopped": False}})
    store.create("tasks", {"metadata": {"name": "t1", "namespace": "rlark-gpu-a"}, "spec": {"role": "Actor"}})
    store.create("pods", {"metadata": {"name": "p-0", "namespace": "rlark-system"}}, plane="rlark-gpu-a")
    store.create("jobs", {"metadata": {"name": "gone"}})
    store.delete("jobs", "gone")
    last = store.resource_version
    assert not list(tmp_path.rglob("*.tmp"))

    again = Store(tmp_path)
    assert again.get("jobs", "j1") == job
    assert again.get("tasks", "t1", "rlark-gpu-a")["spec"] == {"role": "Actor"}
    assert again.get("pods", "p-0", "rlark-system", plane="rlark-gpu-a")["kind"] == "Pod"
    assert again.get("jobs", "gone") is None
    created = again.create("jobs", {"metadata": {"name": "j2"}})
    assert int(created["metadata"]["resourceVersion"]) == last + 1


def test_unreadable_state_is_one_clear_error(tmp_path):
    Store(tmp_path).create("jobs", {"metadata": {"name": "j1"}})
    broken = next((tmp_path / "objects").rglob("j1.json"))
    broken.write_text("{not json")
    with pytest.raises(StateError) as err:
        Store(tmp_path)
    assert str(err.value).startswith(f"unreadable sandbox object {broken}:")


def test_scan_finds_by_any_field_on_one_plane(tmp_path):
    store = Store(tmp_path)
    for name, task in (("a", "t1"), ("b", "t2"), ("c", "t1")):
        store.create("pods", {"metadata": {"name": name, "namespace": "rlark-x"}, "spec": {"taskName": task}})
    store.create("pods", {"metadata": {"name": "d", "namespace": "rlark-system"}, "spec": {"taskName": "t1"}},
                 plane="rlark-x")
    found = store.scan("pods", "root", lambda p: p["spec"]["taskName"] == "t1")
    assert sorted(p["metadata"]["name"] for p in found) == ["a", "c"]


def test_create_update_semantics(tmp_path):
    store = Store(tmp_path)
    job = store.create("jobs", {"metadata": {"name": "j"}, "spec": {"a": 1}})
    assert job["apiVersion"] == "rlinf.io/v1alpha1" and job["kind"] == "Job" and job["metadata"]["generation"] == 1
    with pytest.raises(AlreadyExists):
        store.create("jobs", {"metadata": {"name": "j"}})
    same = store.update("jobs", job)
    assert same["metadata"]["resourceVersion"] == job["metadata"]["resourceVersion"]
    labelled = store.update("jobs", {**job, "metadata": {**job["metadata"], "labels": {"x": "y"}}})
    assert labelled["metadata"]["generation"] == 1
    changed = store.update("jobs", {**labelled, "spec": {"a": 2}})
    assert changed["metadata"]["generation"] == 2
    with pytest.raises(Conflict):
        store.update("jobs", {**job, "spec": {"a": 3}})
    status = store.mutate("jobs", "j", lambda o: {**o, "status": {"phase": "Running"}})
    assert status["status"] == {"phase": "Running"} and status["metadata"]["generation"] == 2
    kept = store.update("jobs", {**status, "status": {"phase": "Failed"}, "spec": {"a": 4}})
    assert kept["status"] == {"phase": "Running"}
    with pytest.raises(NotFound):
        store.update("jobs", {"metadata": {"name": "nope"}})


def test_finalizers_and_garbage_collection(tmp_path):
    store = Store(tmp_path)
    job = store.create("jobs", {"metadata": {"name": "owner"}})
    ref = {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job", "name": "owner", "uid": job["metadata"]["uid"],
           "controller": True}
    store.create("tasks", {"metadata": {"name": "owned", "namespace": "rlark-gpu-a", "ownerReferences": [ref],
                                        "finalizers": ["rlark.io/agent-cleanup"]}})
    store.create("tasks", {"metadata": {"name": "free", "namespace": "rlark-gpu-a"}})
    store.delete("jobs", "owner")
    owned = store.get("tasks", "owned", "rlark-gpu-a")
    assert owned["metadata"]["deletionTimestamp"]
    assert store.get("tasks", "free", "rlark-gpu-a") is not None
    store.mutate("tasks", "owned", lambda o: {**o, "metadata": {**o["metadata"], "finalizers": []}},
                 "rlark-gpu-a")
    assert store.get("tasks", "owned", "rlark-gpu-a") is None

    keeper = store.create("jobs", {"metadata": {"name": "keeper"}})
    store.create("tasks", {"metadata": {"name": "orphan", "namespace": "rlark-gpu-a", "ownerReferences": [
        {**ref, "name": "keeper", "uid": keeper["metadata"]["uid"]}]}})
    store.delete("jobs", "keeper", orphan=True)
    assert store.get("tasks", "orphan", "rlark-gpu-a") is not None


async def test_subscription_replays_history_and_follows(tmp_path):
    store = Store(tmp_path, history=3)
    store.create("jobs", {"metadata": {"name": "a"}})
    start = str(store.resource_version)
    store.create("jobs", {"metadata": {"name": "b", "labels": {"k": "v"}}})
    sub = store.watch("jobs", since=start)
    first = await sub.next(timeout=1)
    assert (first.type, first.object["metadata"]["name"]) == ("ADDED", "b")
    store.delete("jobs", "a")
    store.create("tasks", {"metadata": {"name": "t", "namespace": "n"}})
    second = await sub.next(timeout=1)
    assert (second.type, second.object["metadata"]["name"]) == ("DELETED", "a")
    assert await sub.next(timeout=0.1) is None
    sub.close()

    labelled = store.watch("jobs", labels="k=v")
    initial = await labelled.next(timeout=1)
    assert (initial.type, initial.object["metadata"]["name"]) == ("ADDED", "b")
    labelled.close()

    for name in ("c", "d", "e", "f"):
        store.create("jobs", {"metadata": {"name": name}})
    with pytest.raises(Gone):
        store.watch("jobs", since=start)

    everything = store.watch(resource=None, plane=None, since=str(store.resource_version))
    store.create("pods", {"metadata": {"name": "x", "namespace": "rlark-system"}}, plane="rlark-edge-b")
    event = await everything.next(timeout=1)
    assert (event.plane, event.resource) == ("rlark-edge-b", "pods")
    everything.close()


async def test_store_is_safe_from_other_threads(tmp_path):
    store = Store(tmp_path)
    sub = store.watch("jobs", since=str(store.resource_version))
    await asyncio.gather(*[asyncio.to_thread(store.create, "jobs", {"metadata": {"name": f"j{i}"}})
                           for i in range(20)])
    names = set()
    while len(names) < 20:
        event = await sub.next(timeout=2)
        assert event is not None
        names.add(event.object["metadata"]["name"])
    sub.close()
    rvs = [int(j["metadata"]["resourceVersion"]) for j in store.list("jobs")[0]]
    assert len(set(rvs)) == 20
    meta = json.loads((tmp_path / "objects" / "meta.json").read_text())
    assert meta["resourceVersion"] == store.resource_version


async def test_logs_instances_and_follow(tmp_path):
    logs = LogStore(tmp_path)
    args = ("rlark-gpu-a", "rlark-system", "p-0", "main")
    with pytest.raises(LogsNotFound):
        logs.read(*args)
    logs.append(*args, "one", when=datetime.now(UTC) - timedelta(minutes=5))
    logs.append(*args, "two\nthree")
    assert logs.read(*args) == ["one", "two", "three"]
    assert logs.read(*args, tail=1) == ["three"]
    assert logs.read(*args, since=datetime.now(UTC) - timedelta(minutes=1)) == ["two", "three"]
    with pytest.raises(LogsNotFound):
        logs.read(*args, previous=True)
    logs.end_instance(*args, 1)
    assert logs.read(*args, previous=True) == ["one", "two", "three"], "waiting in back-off: the ended instance"
    assert logs.start_instance(*args) == 1
    logs.append(*args, "after restart")
    assert logs.read(*args, previous=True) == ["one", "two", "three"]
    assert logs.read(*args, timestamps=True)[0].endswith("Z after restart")

    got = []

    async def follow():
        async for line in logs.follow_lines(*args, tail=0, poll=0.02):
            got.append(line)

    task = asyncio.create_task(follow())
    await asyncio.to_thread(logs.streams.wait_follow, "p-0", "main")
    await asyncio.to_thread(logs.append, *args, "live 1\nlive 2")
    await asyncio.to_thread(sent_all, logs, "p-0", "main")
    logs.start_instance(*args)
    await asyncio.wait_for(task, 2)
    assert got == ["live 1", "live 2"]
    assert logs.streams.follows_opened("p-0") == 1
    logs.remove_pod("rlark-gpu-a", "rlark-system", "p-0")
    assert logs.instances(*args) == []


def test_a_wait_on_the_sandbox_that_times_out_names_what_it_waited_for(tmp_path):
    logs = LogStore(tmp_path)
    with pytest.raises(AssertionError, match=r"^the sandbox did not see an open log follow of pod p-0 send all its log "
                                             r"file holds \(0 opened, 0 open\) within 0.01 s$"):
        sent_all(logs, "p-0", timeout=0.01)
    with pytest.raises(AssertionError, match=r"^the sandbox did not see 2 watch\(es\) of jobs on plane root "
                                             r"open \(0 opened, 0 asked for\) within 0.01 s$"):
        logs.streams.wait_watch("jobs", opened=2, timeout=0.01)
    store = Store()
    with pytest.raises(AssertionError, match=r"^the sandbox's store did not reach job j1 stopped within 0.01 s$"):
        store.wait_until(lambda s: s.get("jobs", "j1"), "job j1 stopped", timeout=0.01)
