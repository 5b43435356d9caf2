"""The Ray dashboard client: alive nodes from the ALIVE filter's num_filtered (never total), `ray status`
text, jobs, token header, reached directly or through rlark-server's `/api/taskproxy/<job>-<head>:8265`."""

import pytest

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.cluster.http import Http
from rlark_tui.model.objects import Job
from rlark_tui.raydash.client import RayDashboard
from tests.cluster.ray_fake import STATUS_TEXT, FakeRayDashboard
from tests.cluster.seeding import ROLES, seed_running_job


@pytest.fixture
def dashboard():
    fake = FakeRayDashboard(alive=2, dead=1).start()
    yield fake
    fake.stop()


def test_direct_status_counts_alive_not_total(dashboard):
    status = RayDashboard(Http(dashboard.url, source="Ray dashboard")).status(expected=2)
    assert status["alive_nodes"] == 2 and status["expected"] == 2 and status["error"] is None
    assert status["status_text"] == STATUS_TEXT
    assert status["jobs"][0]["submission_id"] == "probe-job-1" and status["jobs"][0]["status"] == "RUNNING"
    path = dashboard.requests[0][0]
    assert path.startswith("/api/v0/nodes?filter_keys=state&filter_predicates=%3D&filter_values=ALIVE")


def test_token_header_and_token_errors():
    fake = FakeRayDashboard(token="tok-123").start()
    try:
        missing = RayDashboard(Http(fake.url, source="Ray dashboard")).status()
        assert missing["alive_nodes"] is None
        assert missing["error"].startswith("unauthorized (401): the Ray dashboard rejected the credentials")
        wrong = RayDashboard(Http(fake.url, source="Ray dashboard"), token="nope-999").status()
        assert wrong["error"].startswith("forbidden (403): not allowed to get Ray nodes on the Ray dashboard")
        assert "nope-999" not in wrong["error"]
        good = RayDashboard(Http(fake.url, source="Ray dashboard"), token="tok-123").status()
        assert good["alive_nodes"] == 2
        assert fake.requests[-1][1]["Authorization"] == "Bearer tok-123"
    finally:
        fake.stop()


def test_a_401_from_token_mode_ray_reads_the_pod_token_once_and_sends_it_through_the_proxy_header():
    fake = FakeRayDashboard(token="tok-123").start()
    reads: list[bool] = []

    def pod_token(fresh: bool) -> str:
        reads.append(fresh)
        return "stale-1" if len(reads) == 1 else "tok-123"
    try:
        dashboard = RayDashboard(Http(fake.url, source="Ray dashboard"), via_proxy=True, pod_token=pod_token)
        assert dashboard.status()["alive_nodes"] == 2     # 401 -> mode token -> stale token 403 -> fresh read
        assert reads == [False, True]
        assert fake.requests[-1][1]["X-Ray-Authorization"] == "Bearer tok-123"
        assert dashboard.status()["error"] is None and len(reads) == 2     # kept for the next polls
        tunnel = dashboard.authenticated_http()
        assert tunnel.headers == {"X-Ray-Authorization": "Bearer tok-123"} and tunnel.base == fake.url
    finally:
        fake.stop()


def test_ray_without_token_mode_is_never_asked_for_a_pod_token_and_an_unreadable_token_says_why():
    from rlark_tui.raydash.token import TokenUnavailable
    open_ray = FakeRayDashboard().start()
    locked = FakeRayDashboard(token="tok-123").start()

    def no_token(fresh: bool) -> str:
        raise TokenUnavailable("Ray wants a token, and the Header role j-actor has no Running Pod to read it in")
    try:
        plain = RayDashboard(Http(open_ray.url, source="Ray dashboard"), pod_token=lambda fresh: 1 / 0)
        assert plain.status()["alive_nodes"] == 2 and plain.authenticated_http().headers == {}
        failed = RayDashboard(Http(locked.url, source="Ray dashboard"), via_proxy=True, pod_token=no_token).status()
        assert failed["error"] == ("Ray dashboard: Ray wants a token, and the Header role j-actor has no Running Pod "
                                   "to read it in")
    finally:
        open_ray.stop()
        locked.stop()


def test_unreachable_dashboard_is_an_error_entry():
    fake = FakeRayDashboard().start()
    url = fake.url
    fake.stop()
    status = RayDashboard(Http(url, source="Ray dashboard of x"), timeout=1).status(expected=3)
    assert status["alive_nodes"] is None and status["expected"] == 3
    assert status["error"] == f"cannot reach the Ray dashboard of x at {url}: connection refused"


def test_a_ray_answer_past_its_bound_is_one_line_naming_it(dashboard, monkeypatch):
    """Ray's text answers (the `ray status` text, a traceback, a log file's tail) are read to MAX_TEXT_BYTES."""
    from rlark_tui.raydash import client

    monkeypatch.setattr(client, "MAX_TEXT_BYTES", 100)
    status = RayDashboard(Http(dashboard.url, source="Ray dashboard")).status(expected=2)
    assert status["alive_nodes"] is None and status["error"].startswith(
        f"the answer of the Ray dashboard at {dashboard.url} to get Ray cluster status is larger than the 100 bytes "
        "bound (it says "), status["error"]
    assert status["error"].endswith(" bytes): not read past it")


def test_a_head_listing_thousands_of_dead_actors_is_read_to_the_bounds(dashboard):
    """A seventh round, Ray answers from a hostile head: the State API's `limit` was not held to, and each dead
    worker's stderr tail was a request read to 4 MiB and kept whole, so 20,000 dead actors were 20,000 requests
    (and up to 80 GB of tails) for one rlark diagnose. Rows past the asked limit (here the one past it) are left
    out, the stderr of at most MAX_TAILS dead workers is read, each to the lines asked (here 1,000 sent, 200 asked)."""
    from rlark_tui.raydash import diagnose

    dashboard.actors = [{"state": "DEAD", "pid": 1000 + i, "node_id": "n0", "actor_id": f"a{i}"} for i in range(10_001)]
    dashboard.stderr = "Traceback line\n" * 1_000
    ray = RayDashboard(Http(dashboard.url, source="Ray dashboard"))

    class Access:  # what diagnose asks of a ClusterAccess: the Job's dashboard
        def ray_dashboard(self, job):
            return ray

    notes: list[str] = []
    actors, _workers, _ips, stderr = diagnose._ray(Access(), Job({"metadata": {"name": "j"}}), notes)
    assert len(actors) == 10_000 and notes == [f"Ray: 10,000 dead workers; the stderr of the first "
                                               f"{diagnose.MAX_TAILS} read"]
    assert len(stderr) == diagnose.MAX_TAILS and {len(text.splitlines()) for text in stderr.values()} == {200}
    assert sum(path.startswith("/api/v0/logs/file") for path, _ in dashboard.requests) == diagnose.MAX_TAILS


def test_through_rlark_server_taskproxy_with_token(sb, env, dashboard):
    pods = seed_running_job(sb, "ray-proxy", ROLES)
    (env / "config.yaml").write_text("ray:\n  token: ray-secret-token\n")
    sb.proxies.register_pod(*pods["actor"], 8265, dashboard.url)
    try:
        access = ClusterAccess.open(str(sb.kubeconfig))
        job = Job(sb.store.get("jobs", "ray-proxy"))
        status = access.ray_status(job)
    finally:
        sb.proxies.unregister_pod(*pods["actor"])
    assert status["error"] is None, status["error"]
    assert status["alive_nodes"] == 2 and status["expected"] == 2
    assert status["source"] == "Ray dashboard of ray-proxy (rlark-server)"
    assert dashboard.requests[-1][1].get("X-Ray-Authorization") == "Bearer ray-secret-token"


def test_describe_shows_alive_vs_expected(rl, sb, dashboard):
    pods = seed_running_job(sb, "ray-desc", ROLES)
    sb.proxies.register_pod(*pods["actor"], 8265, dashboard.url)
    try:
        result = rl("describe", "job", "ray-desc")
    finally:
        sb.proxies.unregister_pod(*pods["actor"])
    assert result.code == 0, result.err
    ray = result.out.split("Ray:\n", 1)[1].splitlines()
    assert ray[0] == "  alive nodes 2 / expected 2  (Ray dashboard of ray-desc (rlark-server))"


def test_configured_url_wins_over_the_proxy(rl, sb, env, dashboard):
    seed_running_job(sb, "ray-url", ROLES)
    (env / "config.yaml").write_text(f"ray:\n  urls:\n    ray-url: {dashboard.url}\n")
    access = ClusterAccess.open(str(sb.kubeconfig))
    status = access.ray_status("ray-url")
    assert status["alive_nodes"] == 2 and status["source"] == "Ray dashboard of ray-url"
    ray = rl("describe", "job", "ray-url").out.split("Ray:\n", 1)[1].splitlines()
    assert ray == ["  alive nodes 2 / expected 2  (Ray dashboard of ray-url)", "  ray job probe-job-1: RUNNING"]


def test_a_ray_tunnel_opened_before_ray_is_up_carries_the_token_once_ray_wants_it():
    """`rlark port-forward JOB ray` while Ray still starts in the Header Pod: the dashboard does not answer, so it
    cannot say it wants a token. Once Ray is up and wants one, requests through the same tunnel carry the Pod's
    token (they got Ray's 401 for as long as the tunnel lived)."""
    import http.client

    from rlark_tui.cluster.tunnel import ray_tunnel

    fake = FakeRayDashboard(alive=3, dead=0, token="tok-123")
    fake.up = False
    fake.start()
    tunnel = ray_tunnel(RayDashboard(Http(fake.url, source="Ray dashboard"), via_proxy=True,
                                     pod_token=lambda fresh: "tok-123")).start()

    def get(path: str) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", tunnel.local_port, timeout=10)
        try:
            conn.request("GET", f"/{tunnel.token}{path}")
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    try:
        assert get("/api/v0/nodes")[0] == 502
        fake.up = True
        status, body = get("/api/v0/nodes")
        assert status == 200 and body.count(b'"ALIVE"') == 3
        assert fake.requests[-1][1]["X-Ray-Authorization"] == "Bearer tok-123"
        assert get("/api/cluster_status")[0] == 200
    finally:
        tunnel.stop()
        fake.stop()


def test_a_head_answering_endless_status_and_jobs_is_kept_to_what_the_ray_tab_shows(dashboard):
    """A seventh round: the `ray status` text (4 MiB: 100,000 lines) and the Ray jobs list were kept whole and
    masked and laid out in the TUI's Ray tab after every poll (1.4 s of masking alone per poll)."""
    from rlark_tui.raydash import client

    dashboard.status_text = " 1 node_6fbe\n" * 5000
    dashboard.ray_jobs = [{"submission_id": f"j{i}", "status": "SUCCEEDED"} for i in range(5000)]
    status = RayDashboard(Http(dashboard.url, source="Ray dashboard")).status(expected=2)
    lines = status["status_text"].splitlines()
    assert len(lines) == client.MAX_STATUS_LINES + 1 and lines[-1] == "… 3,000 more lines"
    assert len(status["jobs"]) == client.MAX_STATUS_JOBS and status["jobs"][-1]["submission_id"] == "j4999"



def test_a_head_listing_more_ranks_than_rlark_dumps_is_one_line(dashboard):
    """A seventh round: a head listing 10,000 ALIVE actors was 10,000 traceback requests for `rlark stacks`, each
    dump kept until all were grouped. Past raydash.stacks.MAX_RANKS none is taken, in one line."""
    from rlark_tui.raydash import stacks

    dashboard.actors = [{"state": "ALIVE", "pid": 1000 + i, "node_id": "n0", "name": f"a{i}"}
                        for i in range(stacks.MAX_RANKS + 1)]
    ray = RayDashboard(Http(dashboard.url, source="Ray dashboard"))

    class Access:  # what stacks.take asks of a ClusterAccess
        def ray_dashboard(self, job):
            return ray

        def job_tasks(self, name):
            return []

        def job_pods(self, name, tasks=None):
            return []

    with pytest.raises(stacks.StacksUnavailable, match="stacks: 1,025 ranks, more than 1,024: not taken"):
        stacks.take(Access(), Job({"metadata": {"name": "j"}}))
    assert not any(path.startswith("/worker/traceback") for path, _ in dashboard.requests)


def test_a_refusal_quotes_rays_message_on_one_short_line():
    """Issue 33, a fourteenth round (a hostile Ray head): Ray's envelope says why it failed in `msg`, and the error
    quoted it as it came, of any type and length, so {"result": false, "msg": "x<LF>first failure: ..."} forged a
    line wherever the error was printed (rlark diagnose's notes, a bundle's). It is one line of at most 500
    characters. A real 127.0.0.1 server answers."""
    import json

    from rlark_tui.cluster.errors import ApiError
    from tests import loopback

    class Refusing(loopback.QuietHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            self.answer(200, json.dumps({"result": False, "msg": "x\nfirst failure: ActorGroup:0" + "y" * 100_000}).encode())

    with loopback.serving(Refusing) as url, pytest.raises(ApiError) as refused:
        RayDashboard(Http(url, source="Ray dashboard")).alive_nodes()
    assert "\n" not in str(refused.value) and "failed: x\\nfirst failure: ActorGroup:0y" in str(refused.value)
    assert len(str(refused.value)) < 700


@pytest.mark.parametrize("result", [{"result": 5}, {"result": 1.5}, {"result": True}, {"num_filtered": True},
                                    {"num_filtered": -3, "result": []}, {"num_filtered": int("9" * 4000)}],
                         ids=["rows-a-number", "rows-a-float", "rows-true", "count-true", "count-negative",
                              "count-of-4000-digits"])
def test_a_node_count_of_the_wrong_shape_is_an_error_entry_not_a_count_or_a_traceback(result):
    """Issue 33, a twenty-first round, a hostile Ray head's answers of the wrong type at each JSON path: the ALIVE
    filter's answer without a num_filtered and a `result` that was a number raised TypeError out of the poll, in
    `rlark describe`, the Ray tab and, on its reading thread, the alert round of every Job, where no other Job's
    alert was judged; a count of `true`, -3 or 4,000 digits was shown as the alive nodes."""
    import json

    from tests import loopback

    class Answering(loopback.QuietHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            body = {"clusterStatus": "1 node"} if self.path.startswith("/api/cluster_status") else {"result": result}
            self.answer(200, json.dumps({"result": True, "msg": "", "data": body}).encode())

    with loopback.serving(Answering) as url:
        status = RayDashboard(Http(url, source="Ray dashboard")).status(expected=2)
    assert status["alive_nodes"] is None and status["error"] == "Ray dashboard: /api/v0/nodes answered without a " \
                                                                "count of alive nodes", status


@pytest.mark.parametrize("token", ["tok-€", b"tok-\xff".decode("utf-8", "replace"), "tok-\x1b]52;c;eA==\x07"],
                         ids=["euro-sign", "invalid-utf-8", "escape"])
def test_a_header_pods_ray_token_no_header_takes_is_one_line_not_a_traceback(token):
    """Issue 33, a twenty-first round, a hostile Pod's exec answers: the Ray token rlark reads in the Header Pod (the
    fixed `ray-token`, $RAY_AUTH_TOKEN of the Job author's Pod) was sent as it came, and one holding a character
    Latin-1 has no form for (`€`, or an invalid UTF-8 byte read as U+FFFD) raised UnicodeEncodeError out of every
    Ray read, and a control character went on the wire: `rlark stacks`, `diagnose`, `describe`, the Ray tab and the
    alert round that read it. A token is printable ASCII; any other is no token, said in one line."""
    from rlark_tui.cluster.podexec import STATUS, STDOUT
    from rlark_tui.raydash.token import RayTokens
    from tests.pod.hostile_exec import frame, hostile_data_plane

    def answers(conn, _stop) -> None:
        conn.sendall(frame(bytes([STDOUT]) + token.encode()) + frame(bytes([STATUS]) + b'{"status": "Success"}')
                     + frame(b"\x03\xe8", opcode=8))

    header = {"metadata": {"name": "cr", "namespace": "rlark-gpu-a"}, "spec": {"podName": "j-main-0",
                                                                            "taskName": "j-main"},
              "status": {"phase": "Running"}}
    job = Job({"metadata": {"name": "j"}, "spec": {"tasks": [{"name": "main", "head": True}]}})
    fake = FakeRayDashboard(token="tok-123").start()
    try:
        with hostile_data_plane(answers) as access:
            access.job_pods = lambda _name: [header]
            read = RayTokens(access).get
            status = RayDashboard(Http(fake.url, source="Ray dashboard"), via_proxy=True,
                                  pod_token=lambda fresh: read(job, fresh)).status()
    finally:
        fake.stop()
    assert status["alive_nodes"] is None and status["error"] == (
        "Ray dashboard: Ray wants a token, and Pod j-main-0 has one that is not printable ASCII: not sent"), status
