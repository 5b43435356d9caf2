"""The reconciler against the sandbox: watch-driven Snapshots, coalesced posts, relist after 410, stale and
back to connected across an outage, Ray polling of watched Jobs, immutable Snapshots."""

import asyncio
import contextlib
import time

import pytest

from rlark_sandbox.store import NotFound
from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.flow.polls import RAY
from rlark_tui.flow.reconciler import Published, Reconciler
from rlark_tui.flow.snapshot import SourceState
from tests.clock import Clock, ticks
from tests.cluster.seeding import ROLES, job_manifest

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def until(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not reached in time")


@pytest.fixture
async def running(sb, env):
    access = ClusterAccess.open(str(sb.kubeconfig))
    posted = []
    reconciler = Reconciler(access)
    task = asyncio.create_task(reconciler.run(posted.append))
    await until(lambda: reconciler.snapshot.sources["control plane"].status == "connected")
    yield reconciler, posted
    reconciler.stop()
    await asyncio.wait_for(task, 10)


def control(reconciler):
    return reconciler.snapshot.sources["control plane"]


async def test_first_snapshot_has_every_kind_and_source_states(running):
    reconciler, posted = running
    snap = reconciler.snapshot
    assert "demo-ppo" in snap.jobs
    assert "rlark-gpu-a/gpu-a1" in snap.nodes and "rlark-edge-b/edge-b1" in snap.nodes
    assert "demo-net" in snap.domains
    assert snap.sources["gateway"].status in ("stale", "connected")
    assert any(isinstance(m, Published) for m in posted)
    assert any(m.snapshot.sources["control plane"].status == "connected" for m in posted)
    with pytest.raises(TypeError):
        snap.jobs["x"] = {}
    await until(lambda: "data plane rlark-gpu-a" in reconciler.snapshot.sources
                and reconciler.snapshot.sources["data plane rlark-gpu-a"].status == "connected")


async def test_changes_arrive_by_watch_and_bursts_are_coalesced(running, sb):
    reconciler, posted = running
    before = len([m for m in posted if isinstance(m, Published)])
    for index in range(40):
        sb.store.create("jobs", job_manifest(f"burst-{index}", [ROLES[1]]))
    await until(lambda: all(f"burst-{i}" in reconciler.snapshot.jobs for i in range(40)))
    changes = [m for m in posted if isinstance(m, Published)][before:]
    assert 1 <= len(changes) < 40
    assert any("burst-1" in m.snapshot.changes.get("jobs", ()) for m in changes)
    sb.store.delete("jobs", "burst-0")
    await until(lambda: "burst-0" not in reconciler.snapshot.jobs)


async def test_relists_after_410_and_keeps_up(running, sb):
    reconciler, _ = running
    opened = sb.streams.watches_opened("jobs")
    sb.faults.expire_watches(resource="jobs", times=1)
    sb.faults.close_watches_every(0.5)
    # the open watch ends after 0.5 s, the next one gets the 410; after the relist one watches, ends and resumes
    await asyncio.to_thread(sb.streams.wait_watch, "jobs", opened=opened + 2)
    sb.faults.close_watches_every(None)
    sb.store.create("jobs", job_manifest("after-410", [ROLES[1]]))
    # the other kinds' watches were closed too, each said in the control plane's state until it is open again
    await until(lambda: "after-410" in reconciler.snapshot.jobs and control(reconciler).status == "connected")


async def test_outage_makes_the_control_plane_stale_then_connected_again(running, sb, monkeypatch):
    reconciler, posted = running
    clock = Clock()
    monkeypatch.setattr(sb.faults, "clock", clock)
    sb.faults.outage(2.0, mode="drop")
    await until(lambda: control(reconciler).status == "stale")
    assert control(reconciler).reason.endswith("; reconnecting")
    clock.now += 2.0
    sb.store.create("jobs", job_manifest("after-outage", [ROLES[1]]))
    await until(lambda: "after-outage" in reconciler.snapshot.jobs, timeout=30)
    await until(lambda: control(reconciler).status == "connected")
    states = [m.snapshot.sources["control plane"].status for m in posted]
    assert "stale" in states and states[-1] == "connected"


async def test_a_control_plane_that_answers_nothing_reads_stale_within_a_probe(sb, env):
    """A stopped server (SIGSTOP, a link gone silent) keeps the watches open and sends nothing: after a probe
    interval without a watch event the reconciler asks for one Job, and no answer within the probe's timeout makes
    the control plane stale (a context's header: unreachable) and reopens the watches; an answer again makes it
    connected, and changes arrive by watch as before."""
    access = ClusterAccess.open(str(sb.kubeconfig))
    reconciler = Reconciler(access, probe_interval=1.0)
    task = asyncio.create_task(reconciler.run(lambda _published: None))
    try:
        await until(lambda: control(reconciler).status == "connected")
        opened = sb.streams.watches_opened("jobs")
        sb.faults.delay(30, verb="list", resource="jobs")
        await until(lambda: control(reconciler).status == "stale", timeout=10)
        assert control(reconciler).reason.startswith("timed out") and "(list jobs)" in control(reconciler).reason
        await asyncio.to_thread(sb.streams.wait_watch, "jobs", opened=opened + 1)  # the watch opened again
        sb.faults.clear()
        await until(lambda: control(reconciler).status == "connected", timeout=10)
        sb.store.create("jobs", job_manifest("after-silence", [ROLES[1]]))
        await until(lambda: "after-silence" in reconciler.snapshot.jobs)
    finally:
        reconciler.stop()
        await asyncio.wait_for(task, 10)
        with contextlib.suppress(NotFound):  # not made when the test failed before it
            sb.store.delete("jobs", "after-silence")
        access.close()

async def test_a_probe_a_bug_ended_is_said_and_started_again_so_sources_keep_following(sb, env, monkeypatch):
    """Issue 33 item 5 (follows 51d986a): a bug in the reconciler's probe (an exception its guards of ApiError and
    Unreachable do not expect, from the gateway's, a data plane's or rlark-server's answer) ended the probe loop's
    task, which the reconciler held, so nobody ever retrieved its exception: nothing said, not even crash.Teller's
    line, and the gateway and data planes read as at their last probe for the session (a gateway down later still
    'connected'), a silent control plane never probed. The loop's exception handler is told (crash.Teller, in the
    TUI and rlark watch), the probed sources read stale meanwhile, and the loop starts again after a back-off (here
    of 0.1 s, not Backoff's 0.5 s: the test's probes are 0.2 s apart)."""
    import functools

    from rlark_tui.cluster.access import Backoff
    from rlark_tui.flow import reconciler as reconciler_module
    monkeypatch.setattr(reconciler_module, "Backoff", functools.partial(Backoff, 0.1))
    access = ClusterAccess.open(str(sb.kubeconfig))
    gateway_clusters, raised, told = access.gateway_clusters, [], []

    def with_a_bug():  # the one injection: the gateway's probe reaches a bug, once
        if not raised:
            raised.append(1)
            raise TypeError("a derivation of the gateway's answer no guard expects to raise")
        return gateway_clusters()

    loop = asyncio.get_running_loop()
    handler = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: told.append(context.get("exception")))
    reconciler = Reconciler(access, probe_interval=0.2)
    task = asyncio.create_task(reconciler.run(lambda _published: None))
    def gateway():
        return reconciler.snapshot.sources.get("gateway") or SourceState("gateway", "stale", "not run yet")

    try:
        await until(lambda: gateway().status == "connected", timeout=10)
        access.gateway_clusters = with_a_bug
        await until(lambda: gateway().status == "stale", timeout=10)
        assert gateway().reason == "its probe failed (TypeError); probing again", gateway()
        await until(lambda: gateway().status == "connected", timeout=10)
        sb.faults.fail(503, plane="gateway")
        await until(lambda: gateway().status == "disconnected", timeout=10)
        assert [type(error) for error in told] == [TypeError], told
    finally:
        loop.set_exception_handler(handler)
        reconciler.stop()
        await asyncio.wait_for(task, 10)
        access.close()


async def test_a_bug_applying_one_answer_is_told_and_the_next_answers_still_arrive(sb, env):
    """Issue 33 item 5 (follows 51d986a; one hostile Job never stops another Job's alert): an exception raised while
    the reconciler applied one answer on its loop (here a topic's source over one Job's result) ended the reconciler
    itself: no Job, Pod or alert round reached the TUI or rlark watch again. The answer is told to the loop's
    exception handler (crash.Teller) and left out, and the next answers are applied as before."""
    from rlark_tui.flow.polls import TOPICS, Topic

    access = ClusterAccess.open(str(sb.kubeconfig))
    raised, told = [], []

    def fetch(_access, _index, key):
        return {"read": time.monotonic()}  # a new result at each read

    def source(key, _result):  # the one injection: a derivation over one read's result raises, once
        if not raised:
            raised.append(key)
            raise TypeError("a derivation of one answer no guard expects to raise")
        return f"ray {key}", "connected", ""

    loop = asyncio.get_running_loop()
    handler = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: told.append(context.get("exception")))
    reconciler = Reconciler(access, topics={**TOPICS, RAY: Topic(RAY, 0.1, fetch, source=source)})
    reconciler.subscribe(RAY, "demo-ppo")
    task = asyncio.create_task(reconciler.run(lambda _published: None))
    try:
        await until(lambda: raised, timeout=10)
        sb.store.create("jobs", job_manifest("after-the-bug", [ROLES[1]]))
        await until(lambda: "after-the-bug" in reconciler.snapshot.jobs, timeout=10)
        await until(lambda: "ray demo-ppo" in reconciler.snapshot.sources, timeout=10)  # the next read's source
        assert [type(error) for error in told] == [TypeError], told
    finally:
        loop.set_exception_handler(handler)
        reconciler.stop()
        with contextlib.suppress(TypeError):  # run() raised it, without the change
            await asyncio.wait_for(task, 10)
        with contextlib.suppress(NotFound):
            sb.store.delete("jobs", "after-the-bug")
        access.close()


async def test_watched_job_gets_ray_status_or_a_reason(running):
    reconciler, _ = running
    reconciler.subscribe(RAY, "demo-ppo")
    await until(lambda: "demo-ppo" in reconciler.snapshot.ray)
    status = reconciler.snapshot.ray["demo-ppo"]
    assert status["expected"] == 3 and status["alive_nodes"] is None
    assert status["error"]
    assert reconciler.snapshot.sources["ray demo-ppo"].status == "disconnected"
    reconciler.unsubscribe(RAY, "demo-ppo")


async def test_ray_polling_through_rlark_server_is_at_most_every_two_seconds(sb, env):
    from tests.cluster.ray_fake import FakeRayDashboard
    from tests.cluster.seeding import seed_running_job
    pods = seed_running_job(sb, "rec-ray", ROLES)
    fake = FakeRayDashboard(alive=2, dead=1).start()
    sb.proxies.register_pod(*pods["actor"], 8265, fake.url)
    access = ClusterAccess.open(str(sb.kubeconfig))
    started, finished = [], []
    ray_status = access.ray_status

    def counted(*args, **kwargs):
        started.append(1)
        try:
            return ray_status(*args, **kwargs)
        finally:
            finished.append(1)
    access.ray_status = counted
    clock = Clock()
    reconciler = Reconciler(access, clock=clock)
    task = asyncio.create_task(reconciler.run(lambda _message: None))
    try:
        await until(lambda: "rlark-gpu-a/rec-ray-actor" in reconciler.snapshot.tasks)
        reconciler.subscribe(RAY, "rec-ray")
        await until(lambda: (reconciler.snapshot.ray.get("rec-ray") or {}).get("alive_nodes") == 2)
        assert reconciler.snapshot.sources["ray rec-ray"].status == "connected"
        await until(lambda: len(finished) == len(started))
        first = len(started)
        clock.now += 1.75
        await ticks(clock)
        assert len(started) == first, "read again before its 2 s interval"
        clock.now += 0.25
        await until(lambda: len(started) == first + 1)
        await until(lambda: len(finished) == len(started))
        reconciler.unsubscribe(RAY, "rec-ray")
        settled = len(started)
        clock.now += 10
        await ticks(clock)
        assert len(started) == settled, "read after its subscription ended"
    finally:
        reconciler.stop()
        await asyncio.wait_for(task, 10)
        access.close()
        sb.proxies.unregister_pod(*pods["actor"])
        fake.stop()


async def test_gateway_lookups_subscription_reads_what_rlark_submit_validates_against(running, sb):
    from rlark_tui.flow.polls import GATEWAY_KEY, LOOKUPS, GatewayLookups
    reconciler, _ = running
    reconciler.subscribe(LOOKUPS, GATEWAY_KEY)
    await until(lambda: GATEWAY_KEY in reconciler.snapshot.lookups)
    lookups = reconciler.snapshot.lookups[GATEWAY_KEY]
    assert isinstance(lookups, GatewayLookups) and lookups.notes == ()
    assert lookups.storage_classes == reconciler.access.storage_classes()
    assert lookups.storage_classes and all(isinstance(names, list) for names in lookups.storage_classes.values())
    assert all("public_key" in entry for entry in lookups.ssh_keys)
    assert lookups.clusters
    reconciler.unsubscribe(LOOKUPS, GATEWAY_KEY)
    with pytest.raises(KeyError):
        reconciler.subscribe("no-such-topic", "x")


async def test_a_held_reconciler_lists_jobs_alone_until_their_snapshot_is_shown(sb, env):
    from rlark_tui.flow.polls import GATEWAY_KEY, LOOKUPS
    access = ClusterAccess.open(str(sb.kubeconfig))
    posted = []
    reconciler = Reconciler(access, hold=True)
    reconciler.subscribe(LOOKUPS, GATEWAY_KEY)
    task = asyncio.create_task(reconciler.run(posted.append))
    try:
        await until(lambda: "demo-ppo" in reconciler.snapshot.jobs)
        shown = next(m.snapshot.version for m in posted if "demo-ppo" in m.snapshot.jobs)
        reconciler.release(shown - 1)  # an earlier Snapshot on screen: still held
        await asyncio.sleep(1.0)  # what is asserted: nothing else is read during this second of being held
        snap = reconciler.snapshot
        assert reconciler.held and not snap.tasks and not snap.nodes and not snap.domains and not snap.lookups
        assert not any(name.startswith("data plane") for name in snap.sources)
        assert control(reconciler).status == "stale"
        reconciler.release(shown)
        assert not reconciler.held
        await until(lambda: control(reconciler).status == "connected" and reconciler.snapshot.nodes
                    and GATEWAY_KEY in reconciler.snapshot.lookups)
        await until(lambda: any(name.startswith("data plane") for name in reconciler.snapshot.sources))
    finally:
        reconciler.stop()
        await asyncio.wait_for(task, 10)


async def test_reads_slow_to_a_fifth_while_the_terminal_is_unfocused_and_catch_up_on_focus(sb, env):
    """The pace the TUI sets on Textual's AppBlur/AppFocus: a 2 s read waits 10 s while blurred; focus back, a read
    overdue at 2 s runs at the next tick."""
    from rlark_tui.flow.polls import TOPICS, Topic
    from rlark_tui.flow.reconciler import BLURRED_PACE

    reads = []

    def fetch(access, index, key):
        reads.append(key)
        return {"alive_nodes": 1}

    access = ClusterAccess.open(str(sb.kubeconfig))
    clock = Clock()
    reconciler = Reconciler(access, clock=clock, topics={**TOPICS, RAY: Topic(RAY, 2.0, fetch)})
    task = asyncio.create_task(reconciler.run(lambda _message: None))
    try:
        reconciler.subscribe(RAY, "paced")
        await until(lambda: (reconciler.snapshot.ray.get("paced") or {}).get("alive_nodes") == 1)
        reconciler.set_pace(BLURRED_PACE)
        first = len(reads)
        clock.now += 9.5
        await ticks(clock)
        assert len(reads) == first, "read again before 5 x its 2 s interval while unfocused"
        clock.now += 0.5
        await until(lambda: len(reads) == first + 1)
        clock.now += 3.0
        await ticks(clock)
        assert len(reads) == first + 1
        reconciler.set_pace(1.0)
        await until(lambda: len(reads) == first + 2)
    finally:
        reconciler.stop()
        await asyncio.wait_for(task, 10)
        access.close()


async def test_one_jobs_slow_reads_keep_no_other_jobs_read_or_the_alert_round_waiting(sb, env):
    """issue 33, a twelfth round: a Job whose Ray head, TensorBoard and data plane answer slowly held every one of
    the MAX_PARALLEL_POLLS places with its detail's reads (here four topics of 'evil' that hang), and another Job's
    read and the alert round never ran meanwhile. One key's reads take MAX_POLLS_PER_KEY places at most, and the
    alert round has places of its own."""
    import dataclasses
    import threading

    from rlark_tui.flow.alertpoll import ALERTS, ALL_KEY
    from rlark_tui.flow.polls import DIAGNOSIS, EVIDENCE, METRICS, PROGRESS, TOPICS, Topic

    release = threading.Event()
    reads: list[tuple[str, str]] = []

    def fetch(topic):
        def read(access, index, key):
            reads.append((topic, key))
            if key == "evil":
                release.wait(30)
            return {}
        return read

    slow = {name: Topic(name, 2.0, fetch(name)) for name in (RAY, METRICS, DIAGNOSIS, EVIDENCE, PROGRESS)}
    alerts = dataclasses.replace(TOPICS[ALERTS], fetch=fetch(ALERTS), rounds=None)
    access = ClusterAccess.open(str(sb.kubeconfig))
    reconciler = Reconciler(access, topics={**TOPICS, **slow, ALERTS: alerts})
    task = asyncio.create_task(reconciler.run(lambda _message: None))
    try:
        for name in (RAY, METRICS, DIAGNOSIS, EVIDENCE):
            reconciler.subscribe(name, "evil")
        await until(lambda: sum(1 for _, key in reads if key == "evil") >= 2)
        reconciler.subscribe(PROGRESS, "plain")
        reconciler.subscribe(ALERTS, ALL_KEY)
        await until(lambda: (PROGRESS, "plain") in reads and (ALERTS, ALL_KEY) in reads, timeout=10)
    finally:
        release.set()
        reconciler.stop()
        await asyncio.wait_for(task, 10)
        access.close()


async def test_a_deleted_jobs_results_are_dropped_once_no_one_reads_them(running, sb):
    """Issue 33, a seventeenth round (churn over time): a per-Job topic's result stayed in every Snapshot after its
    Job was deleted and no screen read it any more, so a session whose control plane makes and deletes Jobs under
    new names (with :pods open: each Unsettled Job's health is read) held a result of every Job it ever read. The
    result of a Job still listed stays (a detail opened again shows it at once)."""
    reconciler, _ = running
    names = ("churn-gone-first", "churn-left-first")
    for name in names:
        sb.store.create("jobs", job_manifest(name, [ROLES[1]]))
    await until(lambda: set(names) <= set(reconciler.snapshot.jobs))
    for name in names:  # both read at once
        reconciler.subscribe(RAY, name)
    await until(lambda: set(names) <= set(reconciler.snapshot.ray))
    sb.store.delete("jobs", "churn-gone-first")  # deleted while its detail is open: its result stays meanwhile
    await until(lambda: "churn-gone-first" not in reconciler.snapshot.jobs)
    assert "churn-gone-first" in reconciler.snapshot.ray
    reconciler.unsubscribe(RAY, "churn-gone-first")
    reconciler.unsubscribe(RAY, "churn-left-first")  # closed while the Job is listed: kept
    sb.store.delete("jobs", "churn-left-first")
    await until(lambda: "churn-left-first" not in reconciler.snapshot.jobs)
    assert not {"churn-gone-first", "churn-left-first"} & set(reconciler.snapshot.ray), reconciler.snapshot.ray
