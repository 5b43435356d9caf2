"""Issue 33, a secret renamed by a hostile control plane: the masking of a Job's output knew the secret env values
of the answer it masked, found by the entries' names, so a control plane that answered a Job whose WANDB_API_KEY
entry it had renamed `0` (its value as it was) had that value printed by `rlark describe`, `get -o yaml|json` and
`clone`, where the Task the Pods run from, and the Pods, still name it. Each answer about the Job is masked knowing
the secret env values of the others (text.redact.redact_related)."""

from __future__ import annotations

from tests.clirun import ctrl_c_once_printed
from tests.cluster.seeding import ROLES, at, seed_running_job, write_log

VALUE = "zqRenamedKey8842x"


def _run(rl, argv: tuple[str, ...], shown: str):
    """`rl(*argv)`; a watch (`-w`) is ended by a Ctrl-C once `shown` is on its stdout (the list it was asked for,
    printed whole at once), not by waiting out its --request-timeout (10 s: if `shown` never comes)."""
    if "-w" not in argv:
        return rl(*argv)
    with ctrl_c_once_printed(shown):
        return rl("--request-timeout", "10", *argv)


def _container(obj: dict) -> dict:
    return obj["kubernetes"]["workload"]["template"]["spec"]["containers"][0]


def test_a_secret_env_value_the_control_plane_shows_under_another_name_is_masked_everywhere(rl, sb):
    cluster, pod = seed_running_job(sb, "ren-sec", ROLES)["actor"]
    real = sb.store.get("pods", pod, "rlark-system", cluster)
    real["spec"]["containers"][0]["env"] = [{"name": "WANDB_API_KEY", "value": VALUE}]
    sb.store.update("pods", real, plane=cluster)
    task = sb.store.get("tasks", "ren-sec-actor", cluster)
    _container(task["spec"])["env"].append({"name": "WANDB_API_KEY", "value": VALUE})
    sb.store.update("tasks", task)
    job = sb.store.get("jobs", "ren-sec", "")
    _container(job["spec"]["tasks"][0])["env"].append({"name": "0", "value": VALUE})  # the renamed entry
    sb.store.update("jobs", job)
    write_log(sb, cluster, pod, [f"wandb login {VALUE}"], when=at(1))
    said = {}
    for argv in (("logs", "ren-sec"), ("describe", "job", "ren-sec"), ("get", "jobs", "ren-sec", "-o", "yaml"),
                 ("get", "jobs", "-o", "json"), ("get", "tasks", "-A", "-o", "yaml"), ("clone", "ren-sec"),
                 ("get", "jobs", "ren-sec", "-w", "-o", "json"), ("get", "jobs", "-w", "-o", "yaml")):
        result = said[argv[0]] = _run(rl, argv, "ren-sec")
        assert result.code == (130 if "-w" in argv else 0), (argv, result.err)
        assert VALUE not in result.out + result.err, argv
        assert "ren-sec" in result.out, argv
    described = said["describe"].out
    assert "    Env:            0=***" in described.splitlines(), described


def test_a_bundle_and_logs_mask_a_renamed_secret_env_value_its_tasks_name_where_no_pod_says_it(rl, sb, tmp_path):
    """The same renamed entry in `rlark bundle` and `rlark logs`: they mask what the Job's Pods and the Secrets they
    reference say (cluster/secrets.pods_secrets, LogSecrets), so where no data-plane Pod names the value the
    bundle's Job member and the log lines (a run script that logs in with it) printed it; the Tasks' secret env
    values are known to them too."""
    import tarfile

    cluster, pod = seed_running_job(sb, "ren-bundle", ROLES)["actor"]
    write_log(sb, cluster, pod, [f"wandb login {VALUE}"], when=at(1))
    task = sb.store.get("tasks", "ren-bundle-actor", ROLES[0]["cluster"])
    _container(task["spec"])["env"].append({"name": "WANDB_API_KEY", "value": VALUE})
    sb.store.update("tasks", task)
    job = sb.store.get("jobs", "ren-bundle", "")
    _container(job["spec"]["tasks"][0])["env"].append({"name": "0", "value": VALUE})
    sb.store.update("jobs", job)
    logs = rl("logs", "ren-bundle")
    assert logs.code == 0 and "wandb login ***" in logs.out and VALUE not in logs.out + logs.err, logs
    bundle = tmp_path / "b.tar.gz"
    result = rl("bundle", "ren-bundle", "-o", str(bundle))
    assert result.code == 0, result.err
    with tarfile.open(bundle) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    assert "job.yaml" in members and not [name for name, data in members.items() if VALUE.encode() in data]


def test_a_tasks_secret_env_value_the_control_plane_shows_under_another_name_is_masked_where_its_job_names_it(rl, sb):
    """`rlark get tasks -o yaml|json` (and -w): each Task was masked knowing only its own entries, so a Task whose
    WANDB_API_KEY entry the control plane renamed `0` printed its value, where its Job (and the Job's other Tasks)
    name it. Each Task is masked knowing the secret env values of its Job and of the Job's Tasks."""
    seed_running_job(sb, "ren-task", ROLES)
    job = sb.store.get("jobs", "ren-task", "")
    _container(job["spec"]["tasks"][0])["env"].append({"name": "WANDB_API_KEY", "value": VALUE})
    sb.store.update("jobs", job)
    task = sb.store.get("tasks", "ren-task-actor", ROLES[0]["cluster"])
    _container(task["spec"])["env"].append({"name": "0", "value": VALUE})  # the renamed entry
    sb.store.update("tasks", task)
    for argv in (("get", "tasks", "-A", "-o", "yaml"), ("get", "tasks", "ren-task-actor", "-n", ROLES[0]["cluster"],
                                                        "-o", "json"),
                 ("get", "tasks", "-A", "-w", "-o", "json"), ("get", "tasks", "-A", "-w", "-o", "yaml")):
        result = _run(rl, argv, "ren-task-actor")
        assert result.code == (130 if "-w" in argv else 0), (argv, result.err)
        assert "ren-task-actor" in result.out, argv
        assert VALUE not in result.out + result.err, argv
