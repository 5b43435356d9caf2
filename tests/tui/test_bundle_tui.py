"""`rlark --bundle FILE` (issue 34 item 5): the TUI offline on a bundle rlark wrote. The job list, the Job detail's
Diagnosis card and the log pane show what was captured; the header says which bundle and when; a mutation is
refused in one line. The bundle is written by raydash.bundle.write_bundle from bench/bundle.py's stand-in platform,
with a SIGSEGV diagnosis kept in the state dir beforehand (as `rlark diagnose` keeps one)."""

from __future__ import annotations

import pytest

from bench.bundle import JOB, SECRET, Platform
from rlark_tui.cluster.bundle_source import BundleAccess
from rlark_tui.flow.polls import BUNDLE_TOPICS
from rlark_tui.model.logtarget import Scope
from rlark_tui.raydash.bundle import write_bundle
from rlark_tui.raydash.diagnose import keep
from rlark_tui.screens.job_detail import JobDetailScreen
from rlark_tui.screens.logs import LogScreen
from rlark_tui.telemetry import diagnosis as d
from rlark_tui.tui.app import RlarkApp
from rlark_tui.widgets.status_header import StatusHeader
from tests.pilot import wait_for
from tests.raydebug.recorded import sigsegv_inputs

SIZE = (140, 40)


@pytest.fixture
def bundle(tmp_path):
    state = tmp_path / "state"
    keep(state, "u-bench", d.diagnose(sigsegv_inputs(job=JOB)), context="bench")
    path = tmp_path / "post-mortem.tar.gz"
    write_bundle(Platform(200_000), JOB, path, state)  # type: ignore[arg-type]
    return path


async def test_a_bundle_opens_offline_and_read_only(bundle):
    access = BundleAccess(bundle)
    app = RlarkApp(access, readonly=True, topics=BUNDLE_TOPICS)  # type: ignore[arg-type]
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.index is not None and app.index.job(JOB), "the Job")
            header = app.screen.query_one(StatusHeader).summary()
            assert f"bundle {bundle.name}, captured {access.manifest.captured}" in header
            await pilot.press("s")
            await wait_for(pilot, lambda: any(
                "read-only mode: refusing to stop" in n.message and "(a bundle is read-only)" in n.message
                for n in app._notifications),
                           "the refusal")
            await pilot.press("d")
            assert isinstance(app.screen, JobDetailScreen)
            await wait_for(pilot, lambda: "ActorGroup:1 failed first (signal)" in str(
                app.screen.query_one("#diagnosis-card").render()), "the captured diagnosis")
            await pilot.press("escape")
            app.open_logs(JOB, Scope.ALL)
            screen = await wait_for(pilot, lambda: isinstance(app.screen, LogScreen) and app.screen, "the log pane")

            def shown() -> str:
                return "\n".join(screen.view.line_text(line) for line in screen.buffer)

            await wait_for(pilot, lambda: "login with ***" in shown(), "the captured log lines")
            assert "actor/grad_norm" in shown() and SECRET not in shown()
    finally:
        access.close()


def test_a_bundle_of_endless_members_is_one_line_not_a_scan_without_end(tmp_path, monkeypatch):
    """A bundle is someone else's file: its index stops at MAX_MEMBERS (lowered here, so the crafted archive is small)."""
    import io
    import tarfile

    from rlark_tui.cluster import bundle_source
    from rlark_tui.errors import RlarkError

    crafted = tmp_path / "endless.tar.gz"
    with tarfile.open(crafted, "w:gz") as tar:
        for index in range(60):
            info = tarfile.TarInfo(f"m{index}")
            info.size = 1
            tar.addfile(info, io.BytesIO(b"x"))
    monkeypatch.setattr(bundle_source, "MAX_MEMBERS", 50)
    with pytest.raises(RlarkError, match=r"^--bundle .*endless\.tar\.gz: more than 50 members or 4 GiB unpacked: "
                                         r"not a bundle rlark wrote$"):
        BundleAccess(crafted)


def test_a_crafted_bundle_opens_and_its_log_of_empty_lines_is_read_as_a_tail(tmp_path):
    """A manifest's left_out of the wrong type ('lots', 1e400), or a metric point's time or value ('x', {}), ended
    `rlark --bundle` in a crash; a log member of 16 MiB of empty lines (a 70 KB bundle) was read into a list of 16
    million strings (185 MB; 256 MiB, the member bound, some 15 GB) when its Pod's log was opened: now read as it
    is asked for, the last `tail` lines kept, as a cluster answers tailLines. Here 4 MiB of them: a list of 4 million
    is 46 MB at its peak, the read as asked for 12 MB (its decompression's buffers), whatever the member's size."""
    import io
    import json
    import tarfile
    import tracemalloc

    from rlark_tui.model.keys import WORKLOAD_NAMESPACE
    from rlark_tui.telemetry.bundle import FORMAT, log_member

    path = tmp_path / "crafted.tar.gz"
    manifest = {"format": FORMAT, "job": "j", "members": [{"path": "a", "size": 1, "left_out": "lots"},
                                                          {"path": "b", "size": 1, "left_out": 1e400}]}
    metrics = {"job": "j", "series": {"loss": [["x", 1, "y"], [{}, 2, []], [5.0, 3, 0.5]]}}
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        for name, data in (("manifest.json", json.dumps(manifest).encode()),
                           ("metrics.json", json.dumps(metrics).encode()),
                           (log_member("c", WORKLOAD_NAMESPACE, "p", "main"), b"\n" * (4 << 20))):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    del data
    tracemalloc.start()
    try:
        access = BundleAccess(path)
        shown = [len(batch) for batch in access.pod_log("c", "p", tail=1000).batches()]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [member.left_out for member in access.manifest.members] == [0, 0] and shown == [1000]
    assert [[t, s, None if v != v else v] for t, s, v in access.metrics("j").result.series["loss"]] == [
        [0.0, 1, None], [0.0, 2, None], [5.0, 3, 0.5]]  # no value: NaN
    assert peak < 25_000_000, peak


def test_a_job_of_many_pods_shares_one_total_log_budget_the_bundle_reports(tmp_path):
    """Each container log was whole up to 64 MiB with no bound in all: a Job author's 1,024 Pods were 64 GiB of
    bundle. The logs share one total budget, each at most its equal part, and the bundle says both (here 200,000
    bytes for the stand-in's four Pods of 150,000 bytes each: 50,000 each, the rest counted as left out)."""
    import tarfile

    from rlark_tui.telemetry.bundle import parse_manifest, summary
    from rlark_tui.text.parse import load_json

    path = tmp_path / "many.tar.gz"
    manifest = write_bundle(Platform(150_000), JOB, path, tmp_path / "state",  # type: ignore[arg-type]
                            budget=2**20, total=200_000)
    logs = [member for member in manifest.members if member.read is not None]
    assert len(logs) == 4 and manifest.budget == 50_000
    assert all(member.read >= 150_000 and member.left_out >= 100_000 for member in logs)
    assert sum(member.size for member in logs) <= 200_000 + 4 * 300
    assert "4 container logs, each whole up to 50,000 bytes, 200,000 bytes in all" in summary(manifest, str(path), 1)
    with tarfile.open(path) as tar:
        handle = tar.extractfile("manifest.json")
        assert handle is not None
        written = load_json(handle.read().decode())
    assert written["log_budget"] == 50_000 and written["total_log_budget"] == 200_000
    read_back = parse_manifest(written)
    assert written["container_logs"] == 4 and read_back is not None
    assert (read_back.budget, read_back.total, read_back.logs) == (50_000, 200_000, 4)


def test_a_bundle_of_many_metric_tags_and_points_is_read_as_a_cluster_is(tmp_path):
    """A bundle's metrics.json is someone else's: 120,000 tags of it (3 MB) were 120,000 series, each a line of the
    Metrics tab's tag list, and a series of 100,000 points was plotted whole on every draw. It is read as TensorBoard
    is (cluster/metrics.py): the first MAX_TAGS tags in name order, each thinned to MAX_POINTS, and said. Here one
    tag past MAX_TAGS, and a series of twice MAX_POINTS and one."""

    from rlark_tui.cluster.metrics import MAX_POINTS, MAX_TAGS
    from rlark_tui.telemetry.bundle import FORMAT

    series = {f"tag{index:04}": [[0.0, 1, 1.0]] for index in range(MAX_TAGS)}
    last = 2 * MAX_POINTS
    series["loss"] = [[float(step), step, 0.5] for step in range(last + 1)]
    path = crafted_bundle(tmp_path / "tags.tar.gz", {"format": FORMAT, "job": "j", "members": []},
                          {"job": "j", "series": series})
    access = BundleAccess(path)
    try:
        result = access.metrics("j").result
    finally:
        access.close()
    assert sorted(result.series) == sorted(series)[:MAX_TAGS] and "loss" in result.series
    assert len(result.series["loss"]) == MAX_POINTS and result.series["loss"][-1] == (float(last), last, 0.5)
    assert f"the bundle has {MAX_TAGS + 1:,} tags: the first {MAX_TAGS} read" in result.note


def test_a_bundle_whose_manifest_forges_a_line_is_shown_on_one(tmp_path):
    """The manifest's capture time is shown in the header and the Metrics tab's status line (`captured …`): a
    bundle someone else made with `captured: "…\nfrom TensorBoard, 1 s old"` forged a line of the status under the
    tab, and 1 MB of it was the header's text. It is one bounded line."""

    from rlark_tui.telemetry.bundle import FORMAT

    forged = "2026-12-01T00:00:00Z\nfrom TensorBoard, 1 s old\u202e" + "z" * 1_000_000
    path = crafted_bundle(tmp_path / "forged.tar.gz",
                          {"format": FORMAT, "job": "j", "captured": forged, "members": []},
                          {"job": "j", "series": {"loss": [[0.0, 1, 1.0]]}})
    access = BundleAccess(path)
    try:
        note = access.metrics("j").result.note
    finally:
        access.close()
    for shown in (access.context, note):
        assert shown.isprintable() and "\\n" in shown and len(shown) < 200, shown[:300]


def test_a_bundle_holds_the_check_record_of_its_own_job_not_of_another_of_the_same_name(tmp_path):
    """The bundle took the newest run-check record saved under the Job's name: a record of another Job of that name
    (made again since, or another context's, a hostile control plane's included) was this Job's `check.json`, the
    evidence an issue is judged by. A record is taken only for the Job's uid."""
    import json
    from datetime import UTC, datetime

    from rlark_tui.checks.records import save_record
    from rlark_tui.checks.report import CheckReport

    state = tmp_path / "state"
    save_record(state, CheckReport(JOB, datetime(2026, 12, 1, tzinfo=UTC), (), uid="u-bench"))
    save_record(state, CheckReport(JOB, datetime(2026, 12, 2, tzinfo=UTC), (), uid="u-other"))
    path = tmp_path / "b.tar.gz"
    write_bundle(Platform(1_000), JOB, path, state)  # type: ignore[arg-type]
    access = BundleAccess(path)
    try:
        record = json.loads(access.read("check.json") or b"null")
    finally:
        access.close()
    assert record["checkedAt"].startswith("2026-12-01") and record["uid"] == "u-bench"


def crafted_bundle(path, manifest: dict, metrics: dict, members: dict[str, bytes] | None = None):
    """A bundle someone else made: its manifest and metrics as given, and `members`, nothing else."""
    import io
    import json
    import tarfile

    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        for name, raw in (("manifest.json", json.dumps(manifest).encode()), ("metrics.json", json.dumps(metrics).encode()),
                          *(members or {}).items()):
            info = tarfile.TarInfo(name)
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))
    return path


def test_pods_whose_names_make_one_file_name_each_keep_their_own_log_in_the_bundle(tmp_path):
    """Issue 33, a fourteenth and a fifteenth round (a hostile data plane's Pod CRs): a bundle's members were named
    from the Pods' names (the data plane's text) through file_name, so 'w/0' and 'w_0' were one member, a second
    Pod CR could name another cluster's Pod of the same name, and 'W-0' and 'w-0' were one file once extracted on a
    case-insensitive file system: one Pod's log shown as the other's, or left out, by the order of the list. Each
    Pod's members are now in a folder named by a digest of its cluster, namespace and exact name, the manifest says
    which Pod each is, and `rlark --bundle` shows each Pod its own log."""
    import tarfile

    import bench.bundle as made

    names = [("rlark-gpu-a", "w_0"), ("rlark-gpu-a", "w/0"), ("rlark-edge-b", "w_0"), ("rlark-gpu-a", "W-0"),
             ("rlark-gpu-a", "w-0")]
    twice = ("rlark-gpu-a", "w_0")  # a second Pod CR naming the same Pod: its members once, and a note

    class CollidingNames(Platform):
        def job_pods(self, name, tasks=None):
            crs = [made._cr(rank) for rank in range(len(names) + 1)]
            for cr, (cluster, pod) in zip(crs, [*names, twice], strict=True):
                cr["metadata"]["namespace"], cr["spec"]["podName"] = cluster, pod
            return crs

        def pod_log(self, cluster, pod, **kwargs):
            return iter(()) if kwargs.get("previous") else iter([f"2026-12-02T10:00:00Z written by {pod} in {cluster}"])

    path = tmp_path / "names.tar.gz"
    manifest = write_bundle(CollidingNames(0), JOB, path, tmp_path / "state")  # type: ignore[arg-type]
    access = BundleAccess(path)
    try:
        shown = {(cluster, pod): [line for line in access.pod_log(cluster, pod, namespace="rlark-system")
                                  if "written by" in line] for cluster, pod in names}
    finally:
        access.close()
    assert shown == {(cluster, pod): [f"2026-12-02T10:00:00Z written by {pod} in {cluster}"] for cluster, pod in names}
    with tarfile.open(path) as tar:
        files = [name for name in tar.getnames() if name.startswith(("logs/", "pods/"))]
    assert len({name.lower() for name in files}) == len(files) == 3 * len(names)
    logs = {m.path: dict(m.of) for m in manifest.members if m.path.startswith("logs/")}
    assert sorted((of["cluster"], of["pod"], of["container"]) for of in logs.values()) == sorted(
        (cluster, pod, "main") for cluster, pod in names)
    assert [note.split(": ", 1)[1] for note in manifest.notes if "left out" in note] == [
        "a second member of this name is left out (two Pod CRs name one Pod)"] * 3


def test_a_bundle_an_earlier_rlark_wrote_still_shows_its_pods_logs(tmp_path):
    """Bundles of the earlier layout (rlark-bundle/1: a Pod's members named by its name alone) still open."""
    import json

    from rlark_tui.telemetry.bundle import LEGACY_FORMAT, legacy_log_member, legacy_pod_member

    pod = {"metadata": {"name": "p-0", "namespace": "rlark-system"}, "spec": {"containers": [{"name": "main"}]}}
    path = crafted_bundle(tmp_path / "old.tar.gz", {"format": LEGACY_FORMAT, "job": "j", "members": []}, {},
                          {legacy_log_member("p-0", "main"): b"an old bundle's line\n",
                           legacy_pod_member("p-0"): json.dumps(pod).encode()})
    access = BundleAccess(path)
    try:
        assert list(access.pod_log("rlark-gpu-a", "p-0")) == ["an old bundle's line"]
        assert access.data_plane_pod("rlark-gpu-a", "p-0")["metadata"]["name"] == "p-0"
    finally:
        access.close()



def test_a_container_named_as_a_windows_device_has_a_member_windows_extracts(tmp_path):
    """Issue 33, a twenty-third round (file names made from cluster names: reserved names): a container named aux,
    con, nul, prn, com1 or lpt9 (DNS labels a Job's author may pick) was the member `logs/<pod>/aux.log`, which
    Windows takes for the device AUX whatever its extension, so the log was lost (or written into the device) where
    the bundle attached to an issue was extracted. Its member is named as a container's that is no DNS label; a
    bundle written before still shows that log."""
    from rlark_tui.telemetry.bundle import FORMAT, log_member, pod_folder
    from rlark_tui.text.sinks import windows_device

    for container in ("aux", "con", "nul", "prn", "com1", "lpt9"):
        member = log_member("rlark-gpu-a", "rlark-system", "p-0", container).rsplit("/", 1)[1]
        assert member.startswith(f"{container}_") and not windows_device(member), member
    assert windows_device("AUX.log") and windows_device("nul.tar.gz") and not windows_device("auxiliary.log")
    written_before = f"logs/{pod_folder('rlark-gpu-a', 'rlark-system', 'p-0')}/aux.log"
    path = crafted_bundle(tmp_path / "before.tar.gz", {"format": FORMAT, "job": "j", "members": []}, {},
                          {written_before: b"a line of aux\n"})
    access = BundleAccess(path)
    try:
        assert list(access.pod_log("rlark-gpu-a", "p-0", container="aux")) == ["a line of aux"]
    finally:
        access.close()


def test_a_job_whose_name_holds_a_lone_surrogate_is_bundled(tmp_path):
    """Issue 33, a fifteenth round (a hostile control plane's Job name, a hostile Ray head's JSON): JSON may escape
    a lone surrogate ('\\ud800'), which no UTF-8 file holds, and the bundle's JSON members (the diagnosis, the
    manifest, Ray's actors) were encoded strictly: rlark bundle of such a Job ended in a crash report
    (UnicodeEncodeError). Such a member holds the surrogate as its escape, which JSON reads back as it was."""
    import bench.bundle as made

    name = "x\ud800y"

    class LoneSurrogate(Platform):
        def get(self, kind, _name):
            raw = super().get(kind, made.JOB)
            raw["metadata"]["name"] = name
            return raw

    path = tmp_path / "lone.tar.gz"
    write_bundle(LoneSurrogate(1000), name, path, tmp_path / "state")  # type: ignore[arg-type]
    access = BundleAccess(path)
    try:
        assert access.manifest.job == name
    finally:
        access.close()


def counted_reads(monkeypatch) -> list[int]:
    """The sizes of every read rlark makes of a bundle file from now on, in order."""
    import io

    from rlark_tui.cluster import bundle_source

    read: list[int] = []

    class Counted(io.FileIO):
        def readinto(self, buffer):  # type: ignore[override]
            size = super().readinto(buffer)
            read.append(size or 0)
            return size

    monkeypatch.setattr(bundle_source, "open_input", lambda name, what: io.BufferedReader(Counted(name)))
    return read


def test_a_bundle_that_unpacks_large_is_unpacked_once_not_at_every_poll(tmp_path, monkeypatch):
    """Issue 33, an eighteenth round (a bundle someone else made: a gzip bomb within the 4 GiB bound): a gzip member
    is read forwards only, so each read of a member before the last one read unpacked the archive again from its
    start. With metrics.json and diagnosis.json apart, each Metrics poll (every 5 s) unpacked it all: a 1 MB bundle
    of 1 GB of zeros took 4 s of CPU at every poll, holding the bundle's lock (and every log read) while the TUI
    was open, and 16 s a poll at the bound. What the bundle captured is read once, the members rlark reads at
    open in their order in the archive; the polls answer from what was read."""
    from rlark_tui.model.keys import WORKLOAD_NAMESPACE
    from rlark_tui.telemetry.bundle import FORMAT, pod_member

    pod = b"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
    path = crafted_bundle(tmp_path / "bomb.tar.gz", {"format": FORMAT, "job": "j", "members": []},
                          {"job": "j", "series": {"loss": [[0.0, 1, 1.0]]}},
                          {"padding": bytes(8 << 20), pod_member("c", WORKLOAD_NAMESPACE, "p"): pod,
                           "gap": bytes(1 << 20), "diagnosis.json": b"{}",
                           "job.yaml": b"apiVersion: rlinf.io/v1alpha1\nkind: Job\nmetadata: {name: j}\n"})
    read = counted_reads(monkeypatch)
    access = BundleAccess(path)
    try:
        opened = sum(read)
        for round_ in range(10):
            assert access.metrics("j").result.series["loss"] == [(0.0, 1, 1.0)]
            assert access.diagnosis("j") is None
            assert access.data_plane_pod("c", "p")["metadata"]["name"] == "p"
            if round_ == 0:
                polled = sum(read)
    finally:
        access.close()
    assert opened <= 2.5 * path.stat().st_size, f"opened: {opened / path.stat().st_size:.1f} times the bundle read"
    assert sum(read) == polled, f"{(sum(read) - polled) / path.stat().st_size:.0f} times the bundle read again"


def test_a_log_earlier_in_the_bundle_is_read_without_unpacking_the_archive_again(tmp_path, monkeypatch):
    """Issue 33 (O33a item 1): a gzip stream is read forwards only, so opening a Pod's log that lies earlier in the
    archive than the last member read unpacked the archive again from its start: up to ~16 s a log at the 4 GiB
    bound. The archive is read as a seekable one (local/archives.Unpacked, its inflater's state kept every SPAN
    unpacked bytes, lowered here): opening the logs, in any order and again, reads at most about a SPAN of it."""
    import random

    from rlark_tui.local import archives
    from rlark_tui.model.keys import WORKLOAD_NAMESPACE
    from rlark_tui.telemetry.bundle import FORMAT, log_member

    first, last = (log_member("c", WORKLOAD_NAMESPACE, pod, "main") for pod in ("p0", "p1"))
    path = crafted_bundle(tmp_path / "two.tar.gz", {"format": FORMAT, "job": "j", "members": []},
                          {"job": "j", "series": {}},
                          {first: b"early\n", "padding": random.Random(0).randbytes(4 << 20), last: b"late\n"})
    monkeypatch.setattr(archives, "SPAN", 256 << 10)
    read = counted_reads(monkeypatch)
    access = BundleAccess(path)
    try:
        opened = sum(read)
        for _ in range(3):
            for pod, line in (("p1", "late"), ("p0", "early")):
                before = sum(read)
                assert list(access.pod_log("c", pod)) == [line]
                assert sum(read) - before < path.stat().st_size / 8, \
                    f"{(sum(read) - before) / path.stat().st_size:.1f} times the bundle read again for {pod}'s log"
    finally:
        access.close()
    assert opened <= 1.5 * path.stat().st_size


def test_a_bundle_that_unpacks_past_the_bound_is_one_line(tmp_path, monkeypatch):
    """A bundle is read within MAX_UNPACKED unpacked bytes (lowered here), whatever its headers say."""
    from rlark_tui.cluster import bundle_source
    from rlark_tui.errors import RlarkError

    path = crafted_bundle(tmp_path / "big.tar.gz", {"format": "x", "job": "j", "members": []}, {},
                          {"zeros": bytes(3 << 20)})
    monkeypatch.setattr(bundle_source, "MAX_UNPACKED", 2 << 20)
    with pytest.raises(RlarkError) as refused:
        BundleAccess(path)
    assert str(refused.value) == f"--bundle {path}: more than {bundle_source.MAX_MEMBERS} members or 2 MiB " \
                                 "unpacked: not a bundle rlark wrote"


@pytest.mark.parametrize("argv", [["--bundle", "{b}", "delete", "demo-ppo", "--yes"],
                                  ["stop", "demo-ppo", "--bundle", "{b}"], ["--bundle", "{b}", "get", "jobs"]],
                         ids=["delete", "flag after the command", "get"])
def test_a_command_given_a_bundle_is_refused_before_it_reaches_a_cluster(tmp_path, env, capsys, argv):
    """Issue 33, an eighteenth round (a bundle someone else made): --bundle is a global flag, so every command took it
    and went on to the live cluster without a word: `rlark --bundle post-mortem.tar.gz delete demo-ppo` deleted the
    live Job (what the TUI on that bundle refuses as read-only), and `get jobs` listed the live Jobs as if they were
    the bundle's. Only the TUI opens a bundle; a command given one is one line, before any cluster is read."""
    from rlark_tui.cli import main

    kubeconfig = tmp_path / "kubeconfig"  # one that names a server: reaching it would be another line
    kubeconfig.write_text("apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{name: c, cluster: "
                          "{server: 'https://127.0.0.1:1'}}]\nusers: [{name: u, user: {token: t}}]\n"
                          "contexts: [{name: c, context: {cluster: c, user: u}}]\n")
    path = crafted_bundle(tmp_path / "b.tar.gz", {"format": "rlark-bundle/2", "job": "j", "members": []}, {})
    code = main(["--kubeconfig", str(kubeconfig), *(str(path) if a == "{b}" else a for a in argv)])
    command = next(a for a in argv if a in ("delete", "stop", "get"))
    assert (code, capsys.readouterr().err) == (2, f"error: rlark {command} takes no --bundle: only the TUI opens a "
                                                  "bundle (rlark --bundle FILE), offline and read-only\n")
