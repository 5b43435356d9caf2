"""No output path shows a secret: a Job in the sandbox carries every secret shape (env values, scripts, log lines,
annotations) and every CLI output, saved file and TUI screen that shows it is searched for each secret string.

Also: scripts are data. A Job whose scripts would leave a marker file if anything ran them on this machine is
rendered, submitted, described, fetched and checked from the CLI and the TUI; the marker never appears (this
sandbox has no agent, so nothing at all should run them).
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from textual.css.query import NoMatches
from textual.widgets import DataTable, OptionList, Tree

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.cluster.errors import NotFound
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.flow.messages import SnapshotChanged
from rlark_tui.flow.snapshot import Snapshot
from rlark_tui.jobspec.draft import dump_draft
from rlark_tui.model.logtarget import Scope
from rlark_tui.model.submission import with_submission_record
from rlark_tui.screens.check import CheckScreen
from rlark_tui.screens.job_detail import JobDetailScreen
from rlark_tui.screens.logs import LogScreen
from rlark_tui.text.sanitize import clean
from rlark_tui.tui.app import RlarkApp
from rlark_tui.widgets.live_table import LiveTable
from rlark_tui.widgets.workers import WorkersTree
from tests.cluster.seeding import ROLES, remove_pod, seed_running_job, write_log
from tests.pilot import wait_for
from tests.wizard.helpers import SIZE, base_draft, open_wizard, settle

NAME = "sec-demo"

ENV = {
    "HF_TOKEN": "zqEnvHfToken01", "WANDB_API_KEY": "zqEnvWandb02", "DB_PASSWORD": "zqEnvDbPw03",
    "AWS_SECRET_ACCESS_KEY": "zqEnvAws04", "GOOGLE_APPLICATION_CREDENTIALS": "zqEnvGcp05", "MY_AUTH": "zqEnvAuth06",
    "githubToken": "zqEnvGh07", "Api_Key": "zqEnvApi08", "ssh_passphrase": "zqEnvPass09",
}
SCRIPT_SECRETS = {
    "sk- key": "sk-zqScriptOpenai0123456789ab",
    "bearer": "zqScriptBearer0123456789",
    "PEM body": "zqScriptPemBody0123456789",
    "_KEY=": "zqScriptServiceKey10",
    "TOKEN=": "zqScriptGhtoken11",
    "PASSWORD=": "zqScriptAdminPw12",
    "hf_ token": "hf_zqScriptAbCdEfGhIjKlMnOp",
    "ghp_ token": "ghp_zqScriptAbCdEfGhIjKlMnOpQrStUv",
    "kubeconfig token": "zqScriptKubeToken13",
    "kubeconfig client key": "zqScriptClientKeyData14",
    "kubeconfig password": "zqScriptKubePw15",
}
PREPARE = f"""export OPENAI_API_KEY={SCRIPT_SECRETS['sk- key']}
curl -H 'Authorization: Bearer {SCRIPT_SECRETS['bearer']}' https://hub.example/models
cat > /root/.ssh/id_rsa <<'EOF'
-----BEGIN OPENSSH PRIVATE KEY-----
{SCRIPT_SECRETS['PEM body']}
-----END OPENSSH PRIVATE KEY-----
EOF
MY_SERVICE_KEY={SCRIPT_SECRETS['_KEY=']} python fetch.py
export GHTOKEN={SCRIPT_SECRETS['TOKEN=']}
ADMIN_PASSWORD={SCRIPT_SECRETS['PASSWORD=']} ./setup.sh
huggingface-cli login --token {SCRIPT_SECRETS['hf_ token']}
git clone https://x:{SCRIPT_SECRETS['ghp_ token']}@github.com/o/r
cat > /root/.kube/config <<EOF
users:
- name: u
  user:
    token: {SCRIPT_SECRETS['kubeconfig token']}
    client-key-data: {SCRIPT_SECRETS['kubeconfig client key']}
    password: {SCRIPT_SECRETS['kubeconfig password']}
EOF
pip install -r requirements.txt"""
RUN = f"WANDB_API_KEY={ENV['WANDB_API_KEY']} python train.py --hf-token={SCRIPT_SECRETS['hf_ token']} --lr 3e-4"
LOG_SECRETS = {
    "token=": "zqLogToken16", "bearer": "zqLogBearer0123456789", "PEM": "zqLogPemBody17",
    "sk- key": "sk-zqLogOpenai0123456789abcdef", "API_KEY:": "zqLogWandb18",
}
LOG_LINES = [
    "RLINF_NODE_RANK: 0", f"INFO fetching weights with token={LOG_SECRETS['token=']}",
    f"DEBUG request headers: Authorization: Bearer {LOG_SECRETS['bearer']}",
    "-----BEGIN RSA PRIVATE KEY-----", LOG_SECRETS["PEM"], "-----END RSA PRIVATE KEY-----",
    f"OPENAI_API_KEY={LOG_SECRETS['sk- key']}", f"WANDB_API_KEY: {LOG_SECRETS['API_KEY:']}",
    "Global Step: 1/100",
    # a secret split by an escape sequence is whole on a terminal: it is masked in the text as shown
    f"INFO connecting with {ENV['DB_PASSWORD'][:5]}\x1b[0m{ENV['DB_PASSWORD'][5:]}",
]
EVENT_SECRET = "zqEventPw19"
EVENT = f"pull from https://robot:{EVENT_SECRET}@registry.example/rlinf failed: unauthorized"
SEEDED = "hf_supersecretvalue0123456789"
"""The HF_TOKEN tests.cluster.seeding puts in every seeded Task."""
SECRETS = [*ENV.values(), *SCRIPT_SECRETS.values(), *LOG_SECRETS.values(), EVENT_SECRET, SEEDED]


def leaked(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


def secret_tasks() -> list[dict]:
    tasks = []
    for role in ROLES:
        env = [{"name": "RLARK_TASK_ROLE", "value": role["name"]}] + [{"name": k, "value": v} for k, v in ENV.items()]
        tasks.append({
            "name": role["name"], "head": role.get("head", False), "role": role["role"], "agentType": "Kubernetes",
            "nodeSelector": {"kubernetes.io/hostname": role["node"]}, "prepareScript": PREPARE,
            **({"runScript": RUN} if role.get("head") else {}),
            "kubernetes": {"workload": {"kind": "StatefulSet", "replicas": 1, "template": {"spec": {
                "containers": [{"name": "main", "image": "registry.example/rlinf:v1", "env": env}]}}}}})
    return tasks


@pytest.fixture(scope="module")
def access(reliability_sandbox):
    """A running Job (Tasks, Pods, logs) whose spec, submission record and logs carry every secret shape."""
    sb = reliability_sandbox
    pods = seed_running_job(sb, NAME, ROLES)
    access = ClusterAccess.open(str(sb.kubeconfig), sb.context)
    spec = {"tasks": secret_tasks()}
    record = with_submission_record({"metadata": {"name": NAME}, "spec": spec})["metadata"]["annotations"]
    access.patch(JOBS, NAME, {"metadata": {"annotations": record}, "spec": spec})
    for cluster, pod in pods.values():
        write_log(sb, cluster, pod, LOG_LINES)
    env_role = next(r for r in ROLES if not r.get("head"))
    task = sb.store.get("tasks", f"{NAME}-{env_role['name']}", env_role["cluster"])
    sb.store.update("tasks", {**task, "status": {"phase": "Pending", "message": EVENT, "events": [
        {"type": "Warning", "reason": "Failed", "objectKind": "Pod", "objectName": "x", "count": 2,
         "message": EVENT}], "pullProgress": [
        {"image": "registry.example/rlinf:v1", "status": "Pulling", "message": EVENT}]}}, subresource="status")
    yield access
    access.delete(JOBS, NAME)
    for role in ROLES:
        cluster, pod = pods[role["name"]]
        remove_pod(sb, NAME, cluster, pod)
        sb.store.delete("tasks", f"{NAME}-{role['name']}", cluster)
        if role.get("head"):
            sb.store.delete("services", f"{NAME}-{role['name']}-ray-head", "rlark-system", plane=cluster)
    access.close()


def test_the_job_really_holds_every_secret(access):
    """The server keeps the real values (by design); only what rlark shows or saves is redacted."""
    stored = json.dumps(access.get(JOBS, NAME))
    assert not set(SECRETS) - {SEEDED, EVENT_SECRET, *LOG_SECRETS.values()} - set(leaked(stored))


# ---- CLI output --------------------------------------------------------------------------------------------

def test_describe_shows_env_names_but_no_secret(rl, access):
    result = rl("describe", "job", NAME)
    assert result.code == 0, result.err
    assert "HF_TOKEN" in result.out and "***" in result.out and "pip install -r requirements.txt" in result.out
    assert "Event:" in result.out and "registry.example/rlinf failed: unauthorized" in result.out
    assert leaked(result.out + result.err) == []


def test_describe_ray_errors_show_no_secret(access):
    from rlark_tui.commands.describe import describe_text
    for ray in ({"error": f"dashboard said: Authorization: Bearer {LOG_SECRETS['bearer']}"},
                {"alive_nodes": 1, "expected": 2, "source": "x", "jobs_error": f"token={ENV['MY_AUTH']} rejected"}):
        text = describe_text(access.get(JOBS, NAME), [], [], {}, ray)
        assert "unavailable" in text and leaked(text) == []


@pytest.mark.parametrize("argv", [("jobs", NAME, "-o", "yaml"), ("jobs", "-o", "json"), ("tasks", "-A", "-o", "yaml"),
                                  ("jobs", NAME, "-o", "wide")])
def test_get_output_has_no_secret(rl, access, argv):
    result = rl("get", *argv)
    assert result.code == 0, result.err
    assert NAME in result.out and leaked(result.out + result.err) == []
    if argv[0] == "jobs" and ("yaml" in argv or "json" in argv):
        assert "rlark.io/submitted-spec" in result.out and "***" in result.out


def test_check_record_shown_saved_and_exported_has_no_secret(rl, access, env):
    outputs = {}
    for fmt in ("text", "md", "json"):
        out_file = env / f"record.{fmt}"
        result = rl("check", NAME, "--format", fmt, "--output", str(out_file),
                    "--notes", f"rotated HF_TOKEN={ENV['HF_TOKEN']}", "--recorder", "ops",
                    "--link", f"https://ops:{ENV['DB_PASSWORD']}@wiki.example/run")
        assert result.code in (0, 1, 3), result.err
        outputs[fmt] = result.out + result.err + out_file.read_text()
        assert NAME in result.out
    saved = sorted((env / "state" / "checks").glob(f"{NAME}-*"))
    assert {p.suffix for p in saved} == {".md", ".json"}
    for fmt, text in {**outputs, **{p.name: p.read_text() for p in saved}}.items():
        assert leaked(text) == [], fmt
    assert "rotated HF_TOKEN=***" in outputs["text"]


def test_logs_cli_has_no_secret(rl, access):
    result = rl("logs", NAME, "--role", "actor")
    assert result.code == 0, result.err
    assert "Global Step: 1/100" in result.out and leaked(result.out + result.err) == []
    assert "INFO connecting with ***" in result.out
    raw = rl("logs", NAME, "--role", "actor", "--raw")
    assert "Global Step: 1/100" in raw.out and leaked(clean(raw.out)) == []


def test_submitted_copy_and_submit_output_have_no_secret(rl, access, env):
    name = f"sec-sub-{uuid.uuid4().hex[:6]}"
    path = env / "job.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "rlinf.io/v1alpha1", "kind": "Job", "metadata": {"name": name},
                                    "spec": {"tasks": secret_tasks()[:1]}}))
    result = rl("submit", "-f", str(path))
    try:
        assert result.code == 0, result.err
        saved = list((env / "state" / "submitted").glob(f"{name}-*.yaml"))
        assert len(saved) == 1
        assert leaked(result.out + result.err + saved[0].read_text()) == []
        assert ENV["HF_TOKEN"] in json.dumps(access.get(JOBS, name))
    finally:
        access.delete(JOBS, name)


# ---- error messages ----------------------------------------------------------------------------------------

def test_an_api_error_echoing_secrets_is_redacted(rl, rel, access, env):
    rel.faults.fail(403, verb="create", resource="jobs",
                    message=f"denied for Authorization: Bearer {LOG_SECRETS['bearer']} "
                            f"(password={ENV['DB_PASSWORD']}, key {SCRIPT_SECRETS['hf_ token']})")
    path = env / "job.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "rlinf.io/v1alpha1", "kind": "Job",
                                    "metadata": {"name": "sec-denied"}, "spec": {"tasks": secret_tasks()[:1]}}))
    result = rl("submit", "-f", str(path))
    assert result.code == 1 and "forbidden (403)" in result.err
    assert leaked(result.out + result.err) == []


def kubeconfig_with(user: dict, tail: str = "") -> str:
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": user}]}) + tail


KUBECONFIG_ERRORS = [
    ("malformed YAML", kubeconfig_with({"token": ENV["HF_TOKEN"]}, f"  password: {ENV['DB_PASSWORD']}: [\n")),
    ("bad client key", kubeconfig_with({"client-key-data": ENV["AWS_SECRET_ACCESS_KEY"] + "!!",
                                        "client-certificate-data": "bm90IGEgY2VydA=="})),
    ("exec plugin echoing", kubeconfig_with({"exec": {
        "apiVersion": "client.authentication.k8s.io/v1beta1", "command": "sh",
        "args": ["-c", f"echo 'denied token={ENV['MY_AUTH']} Authorization: Bearer {LOG_SECRETS['bearer']}' >&2; "
                       "exit 1"]}})),
]


@pytest.mark.parametrize("what, text", KUBECONFIG_ERRORS, ids=[what for what, _ in KUBECONFIG_ERRORS])
def test_kubeconfig_errors_show_no_credential(what, text, tmp_path, capsys, caplog, env):
    from rlark_tui.cli import main
    path = tmp_path / "kubeconfig"
    path.write_text(text)
    with caplog.at_level(logging.ERROR):
        code = main(["--kubeconfig", str(path), "--request-timeout", "3", "get", "jobs"])
    captured = capsys.readouterr()
    assert code in (1, 2) and captured.err.startswith("error: ") and "Traceback" not in captured.err
    assert leaked(captured.out + captured.err + caplog.text) == []
    if what == "exec plugin echoing":
        assert "denied token=*** Authorization: Bearer ***" in caplog.text


def test_config_report_shows_no_credential_of_the_kubeconfig(tmp_path, capsys, env):
    from rlark_tui.cli import main
    path = tmp_path / "kubeconfig"
    text = kubeconfig_with({"token": ENV["HF_TOKEN"], "password": ENV["DB_PASSWORD"]})
    path.write_text(text.replace("https://127.0.0.1:9", f"https://admin:{ENV['MY_AUTH']}@127.0.0.1:9/?token="
                                                      f"{ENV['Api_Key']}"))
    code = main(["--kubeconfig", str(path), "config", "--no-check"])
    captured = capsys.readouterr()
    assert code == 0 and "control plane: https://admin:***@127.0.0.1:9" in captured.out
    assert leaked(captured.out + captured.err) == []


# ---- TUI ---------------------------------------------------------------------------------------------------


def screen_text(app) -> str:
    """Everything the current screen shows: every widget's text, table cells, list options and tree labels,
    scrolled out of view or not."""
    parts = []
    for widget in app.screen.walk_children():
        if isinstance(widget, DataTable):
            parts += [str(cell) for key in widget.rows for cell in widget.get_row(key)]
        elif isinstance(widget, LiveTable):
            parts += [str(cell) for index in range(widget.row_count) for cell in widget.get_row_at(index)]
        elif isinstance(widget, OptionList):
            parts += [str(widget.get_option_at_index(i).prompt) for i in range(widget.option_count)]
        elif isinstance(widget, Tree):
            nodes = [widget.root]
            while nodes:
                node = nodes.pop()
                parts.append(str(node.label))
                nodes += node.children
        else:
            rendered = widget.render()
            parts.append(getattr(rendered, "plain", None) or str(rendered))
    return "\n".join(parts)


async def test_tui_list_and_detail_workers_overview_events_and_yaml_show_no_secret(access):
    app = RlarkApp(access)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: NAME in screen_text(app), "the Job in the list")
        assert leaked(screen_text(app)) == []
        app.open_job(NAME, "workers")
        await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen), "the detail")


        def role_rows() -> str:
            try:
                return " ".join(str(node.label) for node in app.screen.query_one(WorkersTree).root.children)
            except NoMatches:
                return ""

        await wait_for(pilot, lambda: "failed: unauthorized" in role_rows(), "the role message in the Workers tab")
        assert leaked(role_rows()) == []
        await pilot.press("d")
        await wait_for(pilot, lambda: "HF_TOKEN" in screen_text(app), "the env in the overview")
        assert leaked(screen_text(app)) == []
        await pilot.press("e")
        await wait_for(pilot, lambda: "failed: unauthorized" in screen_text(app), "the events tab")
        assert leaked(screen_text(app)) == []
        await pilot.press("y")
        await wait_for(pilot, lambda: "rlark.io/submitted-spec" in app.screen.yaml_text, "the YAML tab")
        await settle(pilot)
        assert leaked(app.screen.yaml_text) == [] and leaked(screen_text(app)) == []
        assert "prepareScript" in app.screen.yaml_text


async def test_tui_api_error_echoing_secrets_is_redacted_in_list_and_header(rel, access):
    rel.faults.fail(403, verb="list", resource="jobs",
                    message=f"token {LOG_SECRETS['token=']} Authorization: Bearer {LOG_SECRETS['bearer']} denied")
    app = RlarkApp(access)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: "forbidden (403)" in screen_text(app), "the 403 state")
        text = screen_text(app)
        assert "denied" in text and "Bearer ***" in text and leaked(text) == []


async def test_tui_ray_tab_shows_no_secret(access):
    """The Ray dashboard's answers (status text, job entrypoints, errors) as the reconciler delivers them."""
    ray = {NAME: {"alive_nodes": 2, "source": "dashboard via the sandbox", "error": f"retrying: token={ENV['MY_AUTH']}",
                  "status_text": f"Resources\n 8.0 GPU\n env HF_TOKEN={ENV['HF_TOKEN']}",
                  "jobs": [{"submission_id": "raysubmit_sec", "status": "RUNNING", "entrypoint": RUN}]}}
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        app.post_message(SnapshotChanged(Snapshot(jobs={NAME: access.get(JOBS, NAME)}, ray=ray)))
        await wait_for(pilot, lambda: app.index is not None and app.index.job(NAME), "the snapshot")
        app.open_job(NAME, "ray")
        await wait_for(pilot, lambda: "raysubmit_sec" in screen_text(app), "the Ray tab")
        text = screen_text(app)
        assert "python train.py" in text and "8.0 GPU" in text and leaked(text) == []


async def test_tui_saved_log_has_no_secret(access, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = RlarkApp(access)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.index is not None and app.index.job(NAME), "the Job")
        app.open_logs(NAME, Scope.HEADER)
        await wait_for(pilot, lambda: isinstance(app.screen, LogScreen), "the log pane")
        screen = app.screen

        def shown() -> str:
            try:
                return "\n".join(screen.view.line_text(line) for line in screen.view.shown_lines)
            except NoMatches:
                return ""

        await wait_for(pilot, lambda: "INFO connecting" in shown(), "the log lines")
        assert leaked(shown()) == []
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: getattr(screen, "saved_path", None), "the saved file")
        text = Path(screen.saved_path).read_text()
    assert "Global Step: 1/100" in text and "-----BEGIN RSA PRIVATE KEY-----" in text
    assert leaked(text) == []


async def test_tui_check_screen_and_saved_record_show_no_secret(access, env):
    app = RlarkApp(access)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.index is not None and app.index.job(NAME), "the Job")
        app.open_check(NAME)
        await wait_for(pilot, lambda: isinstance(app.screen, CheckScreen) and app.screen.report is not None,
                         "the report")
        screen = app.screen
        await pilot.click("#check-notes")
        await pilot.press(*f"HF_TOKEN={ENV['HF_TOKEN']}")
        await pilot.press("ctrl+r")
        await settle(pilot)
        shown = [screen_text(app)]
        screen.table.focus()
        for row in range(screen.table.row_count):
            screen.table.move_cursor(row=row)
            await settle(pilot, 2)
            shown.append(screen_text(app))
        shown = "\n".join(shown)
        assert screen.query_one("#check-notes").value == f"HF_TOKEN={ENV['HF_TOKEN']}"
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: list((env / "state" / "checks").glob(f"{NAME}-*.md")), "the record")
    saved = "\n".join(p.read_text() for p in (env / "state" / "checks").glob(f"{NAME}-*"))
    assert "notes: HF_TOKEN=***" in shown and NAME in saved and "HF_TOKEN=***" in saved
    assert leaked(shown) == [] and leaked(saved) == []


async def test_tui_wizard_yaml_preview_shows_no_secret(access):
    draft = base_draft(f"sec-wiz-{uuid.uuid4().hex[:6]}")
    roles = tuple(replace(role, env={**role.env, **ENV}, prepare_script=PREPARE) for role in draft.roles)
    draft = replace(draft, roles=roles, run_script=RUN)
    app = RlarkApp(access)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_wizard(pilot, draft)
        await screen.load(screen.draft, step=4)
        await settle(pilot)
        await wait_for(pilot, lambda: "prepareScript" in screen.preview_yaml, "the preview")
        assert "HF_TOKEN" in screen.preview_yaml and "pip install -r requirements.txt" in screen.preview_yaml
        assert leaked(screen.preview_yaml) == [] and leaked(screen_text(app)) == []
        assert "looks like a secret" in screen_text(app)


# ---- scripts are data --------------------------------------------------------------------------------------

async def test_scripts_are_never_run_on_this_machine(rl, access, env, tmp_path):
    marker = tmp_path / "marker"
    script = (f"touch {marker}\necho $(touch {marker}) `touch {marker}`\n"
              f"python -c 'open(\"{marker}\", \"w\")'")
    name = f"sec-marker-{uuid.uuid4().hex[:6]}"
    draft = base_draft(name)
    draft = replace(draft, run_script=script,
                    roles=tuple(replace(role, prepare_script=script) for role in draft.roles))
    path = env / "draft.yaml"
    path.write_text(dump_draft(draft))
    assert rl("draft", "render", str(path)).code == 0
    assert rl("submit", "-f", str(path), "--dry-run").code == 0
    try:
        assert rl("submit", "-f", str(path)).code == 0
        described = rl("describe", "job", name)
        assert f"touch {marker}" in described.out
        assert rl("get", "jobs", name, "-o", "yaml").code == 0
        assert rl("check", name).code in (0, 1, 3)
        app = RlarkApp(access)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.index is not None and app.index.job(name), "the Job")
            app.open_job(name, "overview")
            await wait_for(pilot, lambda: f"touch {marker}" in screen_text(app), "the scripts in the overview")
            await pilot.press("y")
            await wait_for(pilot, lambda: "prepareScript" in app.screen.yaml_text, "the YAML tab")
            app.open_check(name)
            await wait_for(pilot, lambda: isinstance(app.screen, CheckScreen) and app.screen.report is not None,
                             "the run check")
            screen = await open_wizard(pilot, draft)
            await screen.load(screen.draft, step=4)
            await wait_for(pilot, lambda: f"touch {marker}" in screen.preview_yaml, "the wizard preview")
            await pilot.press("ctrl+t")
            await wait_for(pilot, lambda: "Dry run" in str(screen.query_one("#w-result").render()), "the dry run")
    finally:
        try:
            access.delete(JOBS, name)
        except NotFound:
            pass
    assert not marker.exists()
