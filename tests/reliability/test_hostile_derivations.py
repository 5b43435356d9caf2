"""Issue 33 item 3: every derivation from cluster bytes is total. Hostile objects (a number where a map is
expected, a list for a string, huge and Unicode numbers, control and bidi characters, 1 MB strings, 50,000-deep
nesting) go through the typed views, the SnapshotIndex and its row derivers, the CLI tables, the alert engine and
the run check's rules: each yields a row or finding, never an exception. A fixed, derandomised budget for CI."""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from functools import partial

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlark_sandbox.seed import demo_nodes
from rlark_tui.alerting.rules import JobInputs, RestartMemory, job_findings, restart_findings
from rlark_tui.alerting.thresholds import Thresholds
from rlark_tui.checks.evaluate import evaluate
from rlark_tui.checks.evidence import RunEvidence
from rlark_tui.cluster.kinds import JOBS, NODES, PODS, TASKS
from rlark_tui.cluster.output import render_table
from rlark_tui.flow.snapshot import Snapshot
from rlark_tui.model.objects import Job, Node, Pod, Task
from rlark_tui.model.podstate import failure_reason
from rlark_tui.text.sanitize import clean, drawable
from rlark_tui.view.index import SnapshotIndex, role_rows
from rlark_tui.view.nodes import node_detail
from rlark_tui.view.pods import event_rows, pod_rows
from tests.reliability.malformed import _paths, _replaced
from tests.tui.tui_factories import job_dict, pod_dict, task_dict

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def _deep(levels: int) -> list:
    root: list = []
    inner = root
    for _ in range(levels):
        inner.append([])
        inner = inner[0]
    return root


MEGABYTE = "\u202e" * 16 + "x" * (1 << 20)
DEEP = _deep(50_000)
HOSTILE = (
    5, -1, 0, True, None, 10 ** 400, 2 ** 64, float("nan"), float("inf"), 1e308, "", "x", "²", "١٢", "٣.٥", "1e9",
    "-0", "9" * 5000, "\x00\x1b[31mred\x1b]8;;http://x\x07", "\u202eevil\u2066", "a\nStatus: Succeeded", MEGABYTE,
    DEEP, [], {}, [None], {"": None}, {"name": 5}, ["main"], {"main": 1})
"""Hostile leaves (picked by index: hypothesis would print the 50,000-deep list)."""
KEYS = ("metadata", "spec", "status", "name", "namespace", "labels", "annotations", "tasks", "phase", "containers",
        "containerStatuses", "restartCount", "node", "taskName", "replicas", "kubernetes", "workload", "template",
        "env", "events", "capacity", "conditions")
MAX_LEAVES, MAX_DEPTH, SPOILING_BYTES = 8, 5, 64


def _shape(choices: Iterator[int], leaves: list[int], depth: int = 0) -> object:
    """A hostile shape read off `choices`, bytes hypothesis drew (0 once they run out): one of HOSTILE, or a list of
    up to 3 shapes or a map of up to 4 of KEYS to shapes (while `depth` is under MAX_DEPTH), of at most `leaves[0]`
    leaves in all. The shapes st.recursive drew of the same leaves, lists and maps with max_leaves=8, where its nested
    strategies cost hypothesis about a millisecond a shape, more than the derivations of it."""
    form, pick = next(choices, 0) % 3 if depth < MAX_DEPTH else 0, next(choices, 0)
    if form == 0:
        leaves[0] -= 1
        return HOSTILE[pick % len(HOSTILE)]
    items = []
    for _ in range(pick % (4 if form == 1 else 5)):
        if not leaves[0]:
            break
        key = KEYS[next(choices, 0) % len(KEYS)] if form == 2 else None
        items.append((key, _shape(choices, leaves, depth + 1)))
    return [item for _, item in items] if form == 1 else dict(items)


def _bases(job: str = "j") -> dict[str, dict]:
    return {"job": job_dict(job), "task": task_dict(job, "actor", "rlark-gpu-a"),
            "pod": pod_dict(job, "actor", "rlark-gpu-a", "gpu-a1", "10.0.0.1"), "node": demo_nodes()[0]}


BASES = _bases()
PER_EXAMPLE, DRAWN, EXAMPLES = 10, 12, 64
"""The hostile objects are read ten distinct ones to an example, the first ten different in path or shape of twelve
read off one drawn string of bytes, and derived in one Snapshot: drawn one to an example, hypothesis spent more CPU
on each example than the derivations did, and each object's Snapshot derived its well-formed neighbours again; drawn
as a list of ten unique ones, its lists and uniqueness cost 0.8-0.9 s of CPU, now 0.25 s. 2,524 in all (an example
of fewer than ten different ones, as all zeros, derives those), of which 1,956 differ in kind, path or shape (1,928
drawn as a unique list, counted alike): hypothesis makes each example new, not each object in one."""
WORLDS = [_bases(f"j{number}") for number in range(PER_EXAMPLE)]
"""A Job, Task and Pod for each of an example's hostile Tasks or Pods to stand beside: a Job's role finds one Task
and the first Pod of each name by the Job's name, so ten Tasks or Pods of one Job would be derived as one."""
GOOD = SnapshotIndex(Snapshot(jobs={"j": BASES["job"], "k": BASES["job"]}, tasks={"t": BASES["task"]},
                              pods={"p": BASES["pod"]}, nodes={"n": BASES["node"]}))
"""The index a hostile Snapshot is derived from (never modified by a derivation)."""
PATHS = {kind: [path for path in _paths(raw) if path != ("metadata", "name")] for kind, raw in BASES.items()}


def _spoiling(kind: str, choices: bytes) -> tuple[tuple, object]:
    """(path, shape) read off `choices`: a well-formed object of `kind` with the field at `path` made `shape`, or ()
    for `shape` in its place."""
    read = iter(choices)
    path = () if next(read) % 2 else PATHS[kind][next(read) % len(PATHS[kind])]
    return path, _shape(read, [MAX_LEAVES])


def spoilings(kind: str) -> st.SearchStrategy[tuple[tuple, object]]:
    """A spoiling read off one drawn string of bytes (all zeros, what hypothesis shrinks towards, is HOSTILE[0] at
    the first of PATHS[kind])."""
    return st.binary(min_size=SPOILING_BYTES, max_size=SPOILING_BYTES).map(partial(_spoiling, kind))


def _distinct(kind: str, choices: bytes) -> list[tuple[tuple, object]]:
    """The first PER_EXAMPLE spoilings different in path or shape of the DRAWN read off `choices` (DRAWN x
    SPOILING_BYTES drawn bytes, a spoiling read off each SPOILING_BYTES)."""
    found: dict[tuple, tuple[tuple, object]] = {}
    for at in range(0, len(choices), SPOILING_BYTES):
        path, shape = _spoiling(kind, choices[at:at + SPOILING_BYTES])
        found.setdefault((path, _identity(shape)), (path, shape))
    return list(found.values())[:PER_EXAMPLE]


def _spoiled(base: dict, path: tuple, shape: object) -> object:
    return _replaced(base, path, shape) if path else shape


@st.composite
def hostile_objects(draw, kinds: tuple[str, ...] = tuple(sorted(BASES))) -> tuple[str, object]:
    """(kind, object) of one of `kinds`: a well-formed object with one field spoiled, or a hostile shape in its
    place."""
    kind = draw(st.sampled_from(kinds))
    return kind, _spoiled(BASES[kind], *draw(spoilings(kind)))


def _identity(value: object) -> object:
    """What tells two shapes apart: the hostile leaves by identity (nan equals nothing, and the 50,000-deep list is
    compared by no one)."""
    if isinstance(value, dict):
        return "map", tuple((key, _identity(item)) for key, item in value.items())
    if isinstance(value, list):
        return "list", id(value) if value is DEEP else tuple(_identity(item) for item in value)
    return type(value).__name__, id(value) if value is MEGABYTE or value != value else value


def _views(kind: str, raw: object) -> None:
    view = {"job": Job, "task": Task, "pod": Pod, "node": Node}[kind](raw)
    for name in dir(type(view)):
        if isinstance(getattr(type(view), name), property):
            getattr(view, name)
    repr(view), hash(view)


def _derive_index(bad: Snapshot) -> None:
    """The SnapshotIndex of `bad`, from nothing and from GOOD's, and the rows, roles, Pods, events and Node details
    derived from it."""
    for index in (SnapshotIndex(bad), SnapshotIndex(bad, GOOD)):
        list(index.rows.values())
        for one in index.jobs.values():
            role_rows(index, one)
        pod_rows(index)
        event_rows(index, NOW)
        for key in index.snapshot.nodes:
            node_detail(index, key)


def _derive_everything(kind: str, raw: object) -> None:
    objects = {**{k: copy.copy(v) for k, v in BASES.items()}, kind: raw}
    job, task, pod, node = objects["job"], objects["task"], objects["pod"], objects["node"]
    _views(kind, raw)
    bad = Snapshot(jobs={"j": job, "k": BASES["job"]}, tasks={"t": task}, pods={"p": pod}, nodes={"n": node},
                   version=1)
    _derive_index(bad)
    for plural, items in ((JOBS, [job]), (TASKS, [task]), (PODS, [pod]), (NODES, [node])):
        render_table(plural, items, wide=True, all_namespaces=True)
    inputs = JobInputs(job=job if isinstance(job, dict) else {}, tasks=(task,), pods=(pod,),
                       plane_pods={"rlark-gpu-a/j-actor-0": pod})
    job_findings(inputs, Thresholds(), 0.0)
    restart_findings(inputs, RestartMemory(), 0.0)
    failure_reason(pod)


def _homes(kind: str, count: int) -> list[dict[str, dict]]:
    """The well-formed objects each of `count` hostile objects of `kind` stands beside (and is made from)."""
    return WORLDS[:count] if kind in ("task", "pod") else [BASES] * count


def _derive_together(kind: str, raws: list) -> None:
    """What _derive_everything derives of one hostile object, of each of `raws` (of `kind`) in one Snapshot: the
    Jobs or Nodes beside one well-formed Job, Task, Pod and Node, the Tasks or Pods each beside its _homes'."""
    homes = _homes(kind, len(raws))
    beside = homes if kind in ("task", "pod") else homes[:1]
    keyed = {other: {f"{other[0]}{number}": home[other] for number, home in enumerate(beside)}
             for other in ("job", "task", "pod")} | {"node": {"n": BASES["node"]}}
    keyed[kind] = {f"{kind[0]}{number}": raw for number, raw in enumerate(raws)}
    bad = Snapshot(jobs={**keyed["job"], "k": BASES["job"]}, tasks=keyed["task"], pods=keyed["pod"],
                   nodes=keyed["node"], version=1)
    _derive_index(bad)
    for plural, items in ((JOBS, bad.jobs), (TASKS, bad.tasks), (PODS, bad.pods), (NODES, bad.nodes)):
        render_table(plural, list(items.values()), wide=True, all_namespaces=True)
    for home, raw in zip(homes, raws):
        _views(kind, raw)
        job, task, pod = ({**home, kind: raw}[one] for one in ("job", "task", "pod"))
        inputs = JobInputs(job=job if isinstance(job, dict) else {}, tasks=(task,), pods=(pod,),
                           plane_pods={f"rlark-gpu-a/{home['job']['metadata']['name']}-actor-0": pod})
        job_findings(inputs, Thresholds(), 0.0)
        restart_findings(inputs, RestartMemory(), 0.0)
        failure_reason(pod)


@pytest.mark.parametrize("kind", sorted(BASES))
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(choices=st.binary(min_size=DRAWN * SPOILING_BYTES, max_size=DRAWN * SPOILING_BYTES))
def test_two_thousand_hostile_objects_through_the_derivations_raise_nothing(kind, choices):
    """2,000 hostile objects and more (up to PER_EXAMPLE x EXAMPLES of each of the four kinds), one case per kind
    so that xdist's workers share them. Ten that raise together are derived again one to a Snapshot, to name the
    one that raises."""
    drawn = _distinct(kind, choices)
    try:
        _derive_together(kind, [_spoiled(home[kind], *one) for home, one in zip(_homes(kind, len(drawn)), drawn)])
    except Exception as error:
        for path, shape in drawn:
            try:
                _derive_everything(kind, _spoiled(BASES[kind], path, shape))
            except Exception as alone:
                raise AssertionError(f"a {kind} spoiled at {path or 'its root'} raised {alone!r}") from alone
        raise AssertionError(f"{kind}s spoiled at {[path for path, _ in drawn]} raised {error!r} together") \
            from error


def test_a_megabyte_field_whose_only_controls_are_bidi_marks_is_cleaned_in_one_scan():
    """MEGABYTE has bidi marks and no escape sequence: `clean` tried its sequence pattern at each of its million
    characters, some 50 ms of CPU a clean (the derivations above clean it 15 times, half their CPU), where a scan
    for a character a sequence starts with finds none. A clean of it costs about what `drawable`'s scans of it cost
    (each a class the engine scans for), where it cost 4-5 times as much: counted against it, not against a
    number of seconds, so a slower machine is slower at both. And a sequence after a long printable run is still
    taken out."""
    assert clean(MEGABYTE) == "\\u202e" * 16 + "x" * (1 << 20)
    spent = {clean: 0.0, drawable: 0.0}
    for _ in range(5):
        for function in spent:
            started = time.process_time()
            function(MEGABYTE)
            spent[function] += time.process_time() - started
    assert spent[clean] < 2 * spent[drawable], f"five cleans of a 1 MB field took {spent[clean]:.3f} s of CPU, " \
        f"five drawable {spent[drawable]:.3f} s"
    assert clean("x" * 5000 + "\u202e\x1b]52;c;aGk=\x07\x1b[2Jy\r\n") == "x" * 5000 + "\\u202ey\n"


@settings(max_examples=100, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(hostile_objects())
def test_hostile_objects_through_the_run_checks_rules_raise_nothing(drawn):
    """The run check's rules cost ~5 ms an example: a smaller budget of its own (the 2,000 objects go through the
    derivations above)."""
    kind, raw = drawn
    objects = {**BASES, kind: raw}
    evaluate(RunEvidence("j", NOW, job=objects["job"], tasks=(objects["task"],), pods=(objects["pod"],),
                         nodes=(objects["node"],)))


def test_a_job_the_rules_cannot_read_is_marked_and_the_others_still_alert():
    """What an alert round does with a Job whose judgement raised (flow/alertpoll.py): a job-unreadable finding
    (`unreadable: <why>`) for it, merged with the other Jobs' findings, so their alerts fire as ever."""
    from rlark_tui.alerting.rules import Book, merge, step, unreadable

    failed = copy.deepcopy(BASES["job"])
    failed["metadata"]["name"], failed["status"] = "ok", {"phase": "Failed"}
    others = job_findings(JobInputs(job=failed), Thresholds(), 0.0)
    marked = unreadable(Job({"metadata": {"name": "odd"}}), RecursionError("deep"))
    book = step(Book(), merge([others, marked]), now=0.0)
    firing = {(alert.job, alert.rule): alert for alert in book.firing()}
    assert ("ok", "job-failed") in firing
    assert firing["odd", "job-unreadable"].evidence == "unreadable: RecursionError judging its objects"


@pytest.mark.parametrize(("kind", "path", "leaf"), [
    ("pod", ("spec", "podName"), "j-actor-²³"), ("node", ("status", "capacity", "cpu"), "1Ei"),
    ("node", ("status", "allocatable", "memory"), "2E"), ("pod", ("spec", "podName"), "j-actor-" + "9" * 5000)],
    ids=["unicode-ordinal", "exbi", "exa", "5000-digit-ordinal"])
def test_fresh_hostile_numbers_through_the_derivations_raise_nothing(kind, path, leaf):
    """A second round's inputs: Unicode digits after a Pod name's last dash, and Kubernetes' own exa and exbi
    suffixes (`1Ei` was read as the exponent `1E` + `i`)."""
    _derive_everything(kind, _replaced(BASES[kind], path, leaf))


def test_stacks_usage_and_patterns_read_unicode_digits_as_no_number():
    from rlark_tui.model.quantity import parse_quantity
    from rlark_tui.telemetry.stacks import _rank
    from rlark_tui.telemetry.usage import parse_cgroup
    from rlark_tui.text import patterns

    assert _rank("ActorGroup:²") == ("ActorGroup:²", -1, "ActorGroup:²")
    assert parse_cgroup("usage_usec ²\n" + "9" * 5000, 0.0) is None
    assert patterns.refusal("step a{²}") == "" and patterns.compile_pattern("a{²}").search("a{²}")
    assert patterns.refusal("a{" + "9" * 5000 + "}")
    assert parse_quantity("1Ei") == 2.0 ** 60 and parse_quantity("2E") == 2e18 and parse_quantity("1e3") == 1e3
    # issue 33, a sixteenth round: `\d` and float() took any Unicode digit (fullwidth, Arabic-Indic, mixed)
    assert [parse_quantity(text) for text in ("８", "１２Gi", "1٢", "1e٣", "0.５m")] == [None] * 5


def test_a_run_check_and_a_stack_dump_with_5000_digit_numbers_raise_nothing():
    """Numbers matched by `(\\d+)` in a Pod's log or py-spy's output: past Python's 4,300-digit int() limit."""
    from rlark_tui.telemetry.stacks import parse_dump
    from tests.checks import fixtures

    huge = "9" * 5000
    lines = [line.replace("Cluster is ready: 3", f"Cluster is ready: {huge}") for line in fixtures.head_lines()]
    lines += [f"Setting global step to {huge}", f"saved checkpoints/global_step_{huge}/actor/model.pt"]
    evaluate(fixtures.with_log(fixtures.healthy(), "demo-ppo-actor-0", lines))
    dump = parse_dump(f"Process {huge}: python\nThread 0x1 (active): \"MainThread\"\n    train (x.py:{huge})\n")
    assert dump is not None and dump.pid is None and dump.threads[0].frames[0].line is None


def test_pod_metrics_summing_past_any_number_leave_out_that_pod_only():
    """Issue 33 item 3, a third round: a PodMetrics item whose two containers use 1e308 bytes each (a quantity
    that parses) summed to infinity and raised OverflowError in int(), so the whole list, every Pod's CPU and
    memory in rlark top and the usage columns, was lost. That Pod is left out; the others are read."""
    from rlark_tui.telemetry.usage import parse_pod_metrics

    huge = [{"usage": {"cpu": "1e308", "memory": "1e308"}}, {"usage": {"cpu": "1e308", "memory": "1e308"}}]
    body = {"items": [{"metadata": {"name": "hostile"}, "containers": huge},
                      {"metadata": {"name": "ok"}, "containers": [{"usage": {"cpu": "250m", "memory": "1Mi"}}]}]}
    assert parse_pod_metrics(body) == {"ok": (250.0, 1 << 20)}


def test_a_node_whose_amounts_sum_past_a_double_is_described_and_counted():
    """Each amount is a double, but a sum or difference of two is not: a Node CR reporting 1.7e308 allocatable
    and -1.7e308 used (its member cluster's agent writes both), or 10,000 GPUs of 1e307 each, made free or reserved
    inf, and `int(inf)`/`round(inf)` ended `rlark get clusters`, `rlark describe node` and the TUI's :clusters and
    node detail in a crash report. An amount past any machine's (2**63) is no amount, shown '-'."""
    from rlark_tui.model.nodeinfo import clusters_table, describe_node_text
    from rlark_tui.view.nodes import cluster_rows

    node = copy.deepcopy(BASES["node"])
    huge = {"cpu": "1.7e308", "memory": "1.7e308", "nvidia.com/gpu": "1.7e308"}
    node["status"] |= {"allocatable": dict(huge), "capacity": dict(huge),
                       "used": {name: "-" + value for name, value in huge.items()}}
    index = SnapshotIndex(Snapshot(nodes={"n": node}))
    detail = node_detail(index, "n")
    assert detail is not None
    text = describe_node_text(detail)
    assert "inf" not in text and "cpu" in text
    table = clusters_table(cluster_rows(index))
    assert "inf" not in table and "rlark-gpu-a" in table


def test_a_node_of_many_labels_resources_and_pulls_is_described_in_bounded_lines():
    """A Node CR is its member cluster's text: one of 60,000 labels, 20,000 resources and 20,000 image pulls
    (1.8 MB) was 100,000 lines of its detail, 7.5-10 s of the TUI's UI thread at every snapshot while it was open.
    The detail shows MAX_SHOWN of each and counts the rest in one line."""
    from rlark_tui.model.nodeinfo import MAX_SHOWN, describe_node_text

    node = copy.deepcopy(BASES["node"])
    node["metadata"]["labels"] |= {f"l{i:05d}": "v" for i in range(6_000)}
    node["status"]["capacity"] |= {f"r{i:05d}": "1" for i in range(2_000)}
    node["status"]["pullProgress"] = [{"image": f"i{i}", "status": "Pulling"} for i in range(2_000)]
    detail = node_detail(SnapshotIndex(Snapshot(nodes={"n": node})), "n")
    assert detail is not None
    text = describe_node_text(detail).splitlines()
    assert len(text) < 4 * MAX_SHOWN
    labels = len(node["metadata"]["labels"]) - MAX_SHOWN
    assert f"  … {labels:,} more labels (the first {MAX_SHOWN} shown)" == text[-1]
    assert f"  … 1,800 more image pulls (the first {MAX_SHOWN} shown)" in text
    assert any(line.startswith("  … ") and line.endswith(f"more resources (the first {MAX_SHOWN} shown)")
               for line in text)
    assert any(line.split()[:2] == ["nvidia.com/gpu", "8"] for line in text)  # cpu, memory and GPUs come first


def test_an_unscheduled_pods_creation_time_of_any_shape_still_alerts():
    """Issue 33, an eleventh round, a hostile data plane's stamps: the pod-unschedulable rule read the data-plane
    Pod's creationTimestamp with `.replace`, so 5 or a list raised AttributeError and the Job's every finding became
    job-unreadable; a stamp past the calendar in UTC (year 0 or 10000) was a time no reader can turn back."""
    cr = Pod(BASES["pod"])
    for stamp in (5, ["x"], {"a": 1}, "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-23:59", "²", ""):
        real = {"metadata": {"name": cr.pod_name, "creationTimestamp": stamp}, "status": {"phase": "Pending"}}
        found = job_findings(JobInputs(job=BASES["job"], tasks=(BASES["task"],), pods=(BASES["pod"],),
                                       plane_pods={f"{cr.namespace}/{cr.name}": real}), Thresholds(), 0.0)
        unscheduled = [finding for finding in found.findings if finding.rule == "pod-unschedulable"]
        assert len(unscheduled) == 1 and unscheduled[0].since is None, (stamp, found.findings)
