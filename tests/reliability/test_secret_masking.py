"""Secrets are masked exactly where they are (issue 26 item 4).

A Job on the shared sandbox (its Pod really runs, no Ray) echoes its own secret env values, prints escaped JSON
with a password, a private key with its END and one without, then ordinary lines. `logs`, `logs --tail` starting
inside the key, `logs -f`, the TUI log pane and its saved file, and `check` (output and records) never show a
secret; `RAY_AUTH_MODE=token` and the lines after the unterminated key stay readable.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.cluster.secrets import job_secrets
from rlark_tui.model.logtarget import Scope
from rlark_tui.screens.logs import LogScreen
from rlark_tui.tui.app import RlarkApp
from rlark_tui.widgets.log_pane import NOTICE, TEXT
from tests.clirun import cli_runner
from tests.pilot import wait_for
from tests.reliability.running_job import CLUSTER, edge_task, running_job
from tests.sandbox.helpers import member_kubectl
from tests.wizard.helpers import SIZE

NAME = f"mask-{uuid.uuid4().hex[:6]}"
ENV = {"AWS_SECRET_ACCESS_KEY": "zqMaskAws0123", "WANDB_API_KEY": "zqMaskWandb4567", "DB_PASSWORD": "zqMaskDbPw89",
       "RAY_AUTH_MODE": "token", "RUN_LABEL": "zqPlainLabel31"}
REF_SECRET, FROM_SECRET = f"{NAME}-wandb", f"{NAME}-store"
REF_DATA = {"api-key": "zqRefWandb0147", "other": "zqRefOther258"}
FROM_DATA = {"S3_ACCESS": "zqFromS3Access369", "S3_REGION_NAME": "zqFromRegion470", "S3_TABBED": "zqTab\tSecret581",
             "S3_LATIN": b"zqLatin\xe4Secret692"}
"""S3_TABBED as `echo $V` prints it (the tab a space), S3_LATIN not UTF-8 (a Latin-1 password: a log shows U+FFFD)."""
SHOWN = ["zqTab Secret581", "Secret692", base64.b64encode(b"zqFromS3Access369").decode(),
         base64.b64encode(b"zqFromS3Access369\n").decode()]
"""The shapes of FROM_DATA's values the script prints: unquoted, decoded with U+FFFD, in base64."""
"""Secrets in the member cluster: one key taken by `valueFrom.secretKeyRef` into a variable whose name says
nothing (RUN_NOTE), every key of the other by `envFrom` (prefix STORE_). Only the Secret read can mask them."""
SECRET_ENV = [{"name": "RUN_NOTE", "valueFrom": {"secretKeyRef": {"name": REF_SECRET, "key": "api-key"}}}]
RAY_TOKEN: list[str] = []
"""The Job's Ray token (the sandbox's `<job>-ray-token` Secret that its Pods' RAY_AUTH_TOKEN references)."""
ESCAPED_PW = "zqMaskEscPw42"
BODY = [base64.b64encode(hashlib.sha512(f"{NAME}{i}".encode()).digest()[:48]).decode() for i in range(6)]
"""Six 64-character base64 lines, as a private key's body has."""
LOOSE = base64.b64encode(hashlib.sha512(b"loose").digest()[:30]).decode()
CRASH_KEY = ["b3BlbnNzaC1rZXktdjEAAAAABG5vbmU", "zqCrashKeyTail0123=="]
SECRETS = [v for k, v in ENV.items() if k not in ("RAY_AUTH_MODE", "RUN_LABEL")] + [ESCAPED_PW, LOOSE, *BODY, *CRASH_KEY,
                                                                                   REF_DATA["api-key"], *SHOWN,
                                                                                   FROM_DATA["S3_ACCESS"],
                                                                                   FROM_DATA["S3_REGION_NAME"]]
AFTER_KEY = 12
AFTER_LOOSE = 20
DONE = "mask-demo done"
SCRIPT = "\n".join([
    'echo "RAY_AUTH_MODE=$RAY_AUTH_MODE"',
    'echo "aws: $AWS_SECRET_ACCESS_KEY"',
    'echo "$WANDB_API_KEY"',
    'echo "ERROR: login to wandb failed with key $WANDB_API_KEY"',
    f"echo 'cfg={{\\\"password\\\": \\\"{ESCAPED_PW}\\\"}}'",
    'echo "db=$DB_PASSWORD"',
    'echo "label $RUN_LABEL"',
    'echo "ref $RUN_NOTE"',
    'echo "from $STORE_S3_ACCESS and $STORE_S3_REGION_NAME"',
    "echo shapes $STORE_S3_TABBED \"$STORE_S3_LATIN\" $(printf %s \"$STORE_S3_ACCESS\" | base64) "
    "$(echo \"$STORE_S3_ACCESS\" | base64)",
    'echo "rt $RAY_AUTH_TOKEN"',
    "echo '-----BEGIN OPENSSH PRIVATE KEY-----'",
    f"echo '{LOOSE}'",
    f"for i in $(seq 1 {AFTER_LOOSE}); do echo \"after the loose key $i\"; done",
    "echo '-----BEGIN RSA PRIVATE KEY-----'",
    *[f"echo '{line}'" for line in BODY],
    "echo '-----END RSA PRIVATE KEY-----'",
    f"for i in $(seq 1 {AFTER_KEY}); do echo \"after the key $i\"; done",
    f"echo '{DONE}'",
    "sleep 600",
])
CRASH = "\n".join(['echo "env: $AWS_SECRET_ACCESS_KEY ref $RUN_NOTE rt $RAY_AUTH_TOKEN"', 'echo "db $DB_PASSWORD"',
                   "printf '%s\\n' '-----BEGIN OPENSSH PRIVATE KEY-----' " + " ".join(f"'{k}'" for k in CRASH_KEY),
                   "exit 3"])
"""A second role that prints secrets and a cut private key and exits: the run check quotes a crashed container's
last lines (the key's lines are shorter than 64 characters: only the BEGIN before them says what they are)."""


def leaked(text: str) -> list[str]:
    return [secret for secret in SECRETS + RAY_TOKEN if secret in text]


def shows_secret_lines_masked(text: str) -> bool:
    """The lines that echo the Secrets' values and the Ray token are there, masked; the plain value is not."""
    return all(line in text for line in ("ref ***", "from *** and ***", "rt ***", f"label {ENV['RUN_LABEL']}",
                                         "shapes *** *** *** ***"))


def _secret(name: str, data: dict[str, str | bytes]) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": name, "namespace": "rlark-system", "creationTimestamp": "2026-12-01T00:00:00Z"},
            "data": {k: base64.b64encode(v if isinstance(v, bytes) else v.encode()).decode() for k, v in data.items()}}


@pytest.fixture(scope="module")
def job(plain_sandbox):
    for name, data in ((REF_SECRET, REF_DATA), (FROM_SECRET, FROM_DATA)):  # as an operator's kubectl create would
        plain_sandbox.store.create("secrets", _secret(name, data), plane=CLUSTER)
    env = [{"name": "RLARK_TASK_ROLE", "value": "actor"}] + [{"name": k, "value": v} for k, v in ENV.items()]
    actor = edge_task("actor", "edge-b1", SCRIPT, env + SECRET_ENV, head=True)
    actor["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["envFrom"] = [
        {"prefix": "STORE_", "secretRef": {"name": FROM_SECRET}}]
    manifest = {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job", "metadata": {"name": NAME},
                "spec": {"tasks": [actor, edge_task("env", "edge-b2", CRASH, env + SECRET_ENV)]}}
    try:
        with running_job(plain_sandbox, manifest, {f"{NAME}-actor-0": DONE, f"{NAME}-env-0": "db "}):
            token = plain_sandbox.store.get("secrets", f"{NAME}-ray-token", "rlark-system", CLUSTER)
            RAY_TOKEN.append(base64.b64decode(token["data"]["auth_token"]).decode())
            yield plain_sandbox
    finally:
        for name in (REF_SECRET, FROM_SECRET):
            plain_sandbox.store.delete("secrets", name, "rlark-system", CLUSTER)


@pytest.fixture
def rl(job, env, capsys):
    return cli_runner(job.kubeconfig, capsys)


def test_logs_mask_the_jobs_own_secrets_and_nothing_else(rl):
    result = rl("logs", NAME, "--role", "actor")
    assert result.code == 0, result.err
    assert leaked(result.out + result.err) == []
    lines = result.out.splitlines()
    assert "RAY_AUTH_MODE=token" in result.out and "aws: ***" in result.out and DONE in result.out
    assert shows_secret_lines_masked(result.out) and "masking:" not in result.err
    assert 'cfg={\\"password\\": \\"***\\"}' in result.out
    assert sum("after the loose key" in line for line in lines) == AFTER_LOOSE
    assert sum("after the key" in line for line in lines) == AFTER_KEY
    assert any(line.endswith("-----END RSA PRIVATE KEY-----") for line in lines)


@pytest.mark.parametrize("inside", [1, 5])
def test_a_tail_that_starts_inside_the_key_shows_none_of_it(rl, inside):
    """--tail from the 2nd body line, or from the last (which alone is no longer than others)."""
    tail = len(BODY) - inside + 1 + AFTER_KEY + 1
    result = rl("logs", NAME, "--role", "actor", "--tail", str(tail))
    assert result.code == 0, result.err
    assert leaked(result.out) == [] and result.out.count("after the key") == AFTER_KEY


def test_logs_follow_masks_them_too(job, env):
    process = subprocess.Popen(
        [sys.executable, "-m", "rlark_tui", "--kubeconfig", str(job.kubeconfig), "logs", "-f", NAME],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "RLARK_CONFIG": str(env / "config.yaml"), "RLARK_STATE_DIR": str(env / "state")})
    seen = []
    try:
        for line in process.stdout:
            seen.append(line)
            if DONE in line:
                break
    finally:
        process.kill()
        process.wait()
    text = "".join(seen)
    assert DONE in text and "RAY_AUTH_MODE=token" in text and leaked(text) == []
    assert shows_secret_lines_masked(text)


def test_check_output_and_records_have_none(rl, env):
    outputs = []

    def checked(fmt: str) -> str:
        result = rl("check", NAME, "--format", fmt, "--output", str(env / f"r.{fmt}"))
        assert result.code in (0, 1, 3), result.err
        outputs.append(result.out + result.err + (env / f"r.{fmt}").read_text())
        return outputs[-1]

    checked("text")
    # the crashed role's last lines are quoted, masked, once the check finds it crashed: the role restarts in a
    # crash loop, and a check that reads it between a restart and its first lines finds nothing to quote
    deadline = time.monotonic() + 120
    while "env: " not in checked("json"):
        assert time.monotonic() < deadline, "the check never quoted the crashed role's last lines"
    assert "env: *** ref *** rt ***" in outputs[-1]
    saved = [p.read_text() for p in (env / "state" / "checks").glob(f"{NAME}-*")]
    assert saved and leaked("\n".join(outputs + saved)) == []


async def test_tui_log_pane_and_saved_log_have_none(job, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    access = ClusterAccess.open(str(job.kubeconfig), job.context)
    app = RlarkApp(access)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.index is not None and app.index.job(NAME), "the Job")
            app.open_logs(NAME, Scope.ALL)
            await wait_for(pilot, lambda: isinstance(app.screen, LogScreen), "the log pane")
            screen = app.screen

            def shown() -> str:
                return "\n".join(screen.view.line_text(line) for line in screen.buffer)

            await wait_for(pilot, lambda: DONE in shown(), "the log lines")
            text = shown()
            await pilot.press("ctrl+s")
            await wait_for(pilot, lambda: getattr(screen, "saved_path", None), "the saved file")
            saved = Path(screen.saved_path).read_text()
    finally:
        access.close()
    assert "RAY_AUTH_MODE=token" in text and text.count("after the loose key") == AFTER_LOOSE
    assert leaked(text) == [] and leaked(saved) == [] and DONE in saved
    assert shows_secret_lines_masked(text) and shows_secret_lines_masked(saved)


def test_clone_prints_valid_yaml_that_submit_refuses_naming_the_field(rl, env):
    result = rl("clone", NAME)
    assert result.code == 0, result.err
    draft = yaml.safe_load(result.out)
    actor_env = draft["roles"][0]["env"]
    assert actor_env["AWS_SECRET_ACCESS_KEY"] == "***masked***" and actor_env["RAY_AUTH_MODE"] == "token"
    assert leaked(result.out) == [] and "'***masked***'" in result.out
    path = env / "copy.yaml"
    path.write_text(result.out)
    refused = rl("submit", "-f", str(path), "--dry-run")
    assert refused.code == 1
    assert "error roles[0].env.AWS_SECRET_ACCESS_KEY: holds '***masked***'" in refused.err
    assert "roles[0].env.RAY_AUTH_MODE" not in refused.err

    kept = env / "kept.yaml"
    assert rl("clone", NAME, "--file", str(kept)).code == 0
    assert kept.stat().st_mode & 0o777 == 0o600
    assert yaml.safe_load(kept.read_text())["roles"][0]["env"]["AWS_SECRET_ACCESS_KEY"] == ENV["AWS_SECRET_ACCESS_KEY"]
    assert "***masked***" not in rl("submit", "-f", str(kept), "--dry-run").err


def test_an_unreadable_secret_is_said_once_with_v_and_the_rest_still_masked(job, rl):
    """A 403 on the member cluster's Secrets: `logs` works, masks what it knows (the Job's own values), and says
    once on stderr, with -v only, which referenced Secrets it could not read."""
    with job.faults.cleared() as faults:
        faults.fail(403, "get", "secrets", CLUSTER)
        quiet = rl("logs", NAME, "--role", "actor")
        told = rl("logs", NAME, "--role", "actor", "-v")
    assert quiet.code == told.code == 0, told.err
    assert "masking:" not in quiet.err and "aws: ***" in quiet.out
    notices = [line for line in told.err.splitlines() if "masking:" in line]
    assert len(notices) == 1 and f"Secret {REF_SECRET} in cluster {CLUSTER} (403" in notices[0]
    assert f"Secret {FROM_SECRET} in cluster {CLUSTER}" in notices[0] and leaked(notices[0]) == []


async def test_the_log_pane_says_once_which_secret_it_could_not_read(job, env):
    """The same 403 in the TUI: the pane's notice line says it once, its lines still come, the Job's own values
    masked."""
    access = ClusterAccess.open(str(job.kubeconfig), job.context)
    app = RlarkApp(access)
    try:
        with job.faults.cleared() as faults:
            faults.fail(403, "get", "secrets", CLUSTER)
            async with app.run_test(size=SIZE) as pilot:
                await wait_for(pilot, lambda: app.index is not None and app.index.job(NAME), "the Job")
                app.open_logs(NAME, Scope.ALL)
                await wait_for(pilot, lambda: isinstance(app.screen, LogScreen), "the log pane")
                screen = app.screen
                await wait_for(pilot, lambda: any(DONE in line[TEXT] for line in screen.buffer), "the log lines")
                notices = [line[TEXT] for line in screen.buffer if line[NOTICE] and "masking:" in line[TEXT]]
                lines = [line[TEXT] for line in screen.buffer if not line[NOTICE]]
    finally:
        access.close()
    assert len(notices) == 1 and f"Secret {REF_SECRET} in cluster {CLUSTER} (403" in notices[0]
    assert any(line == "aws: ***" for line in lines) and leaked(notices[0]) == []


def test_the_ray_token_rlark_read_from_the_header_is_masked_too(job):
    """The token the fixed `ray-token` read takes from the Header Pod joins the values to mask, even where no
    Secret reference names it (a token from $RAY_AUTH_TOKEN_PATH, a Job whose Pods were not read)."""
    access = ClusterAccess.open(str(job.kubeconfig), job.context)
    try:
        token = access.ray_tokens.get(access.job(NAME))
        found = job_secrets(access, access.get(JOBS, NAME), [], [])
    finally:
        access.close()
    assert token == RAY_TOKEN[0] and token in found.values


@pytest.mark.kubectl
@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_gets_the_secret_as_kubernetes_serves_it(job, tmp_path):
    """Real kubectl: the admin certificate through the sandbox's kubeconfig, then the member cluster's API
    through rlark-server: the Secret with its base64 `data`, and the server-side table kubectl prints."""
    with member_kubectl(job, tmp_path, "edge-b") as kubectl:
        got = json.loads(kubectl("get", "secret", REF_SECRET, "-n", "rlark-system", "-o", "json"))
        table = kubectl("get", "secrets", "-n", "rlark-system")
    assert (got["kind"], got["apiVersion"], got["type"]) == ("Secret", "v1", "Opaque")
    assert {key: base64.b64decode(value).decode() for key, value in got["data"].items()} == REF_DATA
    header, *rows = table.splitlines()
    assert header.split() == ["NAME", "TYPE", "DATA", "AGE"]
    assert [REF_SECRET, "Opaque", "2"] in [row.split()[:3] for row in rows]
    assert [f"{NAME}-ray-token", "Opaque", "1"] in [row.split()[:3] for row in rows]


def test_a_ray_token_read_after_a_log_view_started_is_masked_from_then_on(job):
    """No Secret can be read (403), so the view starts knowing no token; the Ray tab's read of the Header Pod's
    token (the fixed `ray-token`) hands it to the view's redactor as it is read."""
    from rlark_tui.cluster.logs import resolve_targets
    from rlark_tui.cluster.secrets import LogSecrets
    from rlark_tui.text.redact import LineRedactor
    access = ClusterAccess.open(str(job.kubeconfig), job.context)
    redact = LineRedactor()
    try:
        with job.faults.cleared() as faults:
            faults.fail(403, "get", "secrets", CLUSTER)
            masking = LogSecrets(access, access.get(JOBS, NAME), redact.add_known)
            masking.prepare(resolve_targets(access, NAME))
            before = redact(f"rt {RAY_TOKEN[0]}")
            access.ray_tokens.get(access.job(NAME))
    finally:
        access.close()
    assert before == f"rt {RAY_TOKEN[0]}" and redact(f"rt {RAY_TOKEN[0]}") == "rt ***"
