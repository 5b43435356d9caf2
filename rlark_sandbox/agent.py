"""The simulated RLark agent of the sandbox: the Job controller (Jobs -> Tasks, Job status) and one cluster
agent per data plane (Tasks -> StatefulSet pods, scheduling, Pod CR mirrors, Node usage, Task status).

Runs on the sandbox's event loop, reads and writes the Store in-process, and runs each scheduled pod's `main`
container for real through `runner.ContainerRunner`. Decisions come from the pure `plan` module.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import ipaddress
import logging
import re
import secrets
import shutil
import subprocess
import time
import uuid
from pathlib import Path

from rlark_sandbox import gpus, plan, workflows
from rlark_sandbox.logs import LogStore
from rlark_sandbox.objectstore import STORAGE_DIR
from rlark_sandbox.podexec import ExecTarget
from rlark_sandbox.podnet import PodNetwork
from rlark_sandbox.procs import reap_all, start_watchdog
from rlark_sandbox.resources import CONTROL_KUBE, ROOT
from rlark_sandbox.runner import (
    CONTAINER,
    DATA_NAMESPACE,
    ContainerRunner,
    ContainerView,
    Launch,
    PortBlocks,
    RunnerSettings,
    container_env,
    image_fails_pull,
    image_has_ray,
    now_iso,
    temp_dir_for,
)
from rlark_sandbox.store import NotFound, Store, StoreError, Subscription
from rlark_tui.model import keys
from rlark_tui.model.objects import TaskSpec, dig
from rlark_tui.model.quantity import parse_quantity

log = logging.getLogger(__name__)

FINALIZER = "rlark.io/agent-cleanup"
HEAD_SERVICE_PORTS = (("ray", 6379), ("dashboard", 8265), ("metrics", 8080))
DASHBOARD_PORT = 8265
RAY_TOKEN_KEY = "auth_token"
"""The key of a Job's Ray token Secret `<job>-ray-token` in each data plane it runs in (as KubeRay keeps one)."""
MAX_TASK_EVENTS = 100
_ENV_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")
"""A name `envFrom` makes a variable of (the kubelet's IsEnvVarName; other keys are skipped)."""


def _quantity(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


@dataclasses.dataclass
class AgentSettings(RunnerSettings):
    """The agent's knobs: the simulated kubelet's and Ray's (RunnerSettings: `backoff_base`, `ray`, ...), how
    often it reconciles without a change, and whether scheduled Pods get their container started."""

    resync_seconds: float = 5.0
    run_pods: bool = True


class Agent:
    """Started by `Sandbox` (`start()` after the server listens, `await stop()` on shutdown). `proxies` (the
    sandbox's ProxyRegistry) and `tensorboards` (rlark_sandbox/tensorboard.py) are the sandbox's own registries;
    `network` (podnet.PodNetwork) the Pod network its Pods run in (without one: their addresses on this host's lo)."""

    def __init__(self, store: Store, logs: LogStore, state_dir: Path | str, settings: AgentSettings | None = None,
                 *, proxies=None, tensorboards=None, network: PodNetwork | None = None):
        self.store = store
        self.logs = logs
        self.state_dir = Path(state_dir)
        self.root = self.state_dir / "agent"
        self.proxies = proxies
        self.tensorboards = tensorboards
        self.settings = settings if settings is not None else AgentSettings()
        self.resync = self.settings.resync_seconds
        self.run_pods = self.settings.run_pods
        self.network = network if network is not None else PodNetwork(str(self.state_dir))
        self.ports = PortBlocks(str(self.state_dir), self.network)
        self.runners: dict[tuple[str, str], ContainerRunner] = {}
        self._removing: dict[tuple[str, str], asyncio.Task] = {}
        self._kick: asyncio.Event | None = None
        self._tasks: list[asyncio.Task] = []
        self._hosts: dict[str, str] = {}
        self._reaper: subprocess.Popen | None = None
        self._sub: Subscription | None = None
        self._synced: dict[str, tuple] = {}
        self._statused: dict[str, tuple] = {}

    # ----- lifecycle -----
    def set_run_pods(self, run: bool) -> None:
        """Whether scheduled pods get their `main` container started (False: they wait in Pending, no
        process, e.g. for a test session that needs no Ray). Call on the sandbox loop (`sandbox.call`)."""
        self.run_pods = run
        if self._kick is not None:
            self._kick.set()

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        kick = self._kick = asyncio.Event()
        self._reap_previous_run()
        sub = self.store.watch(resource=None, plane=None, since=str(self.store.resource_version))
        self._tasks = [loop.create_task(self._watch(sub, kick), name="agent watch"),
                       loop.create_task(self._loop(kick), name="agent reconcile")]
        self._sub = sub
        kick.set()

    async def stop(self) -> None:
        """Stop every container this agent runs (whole process groups, then their Ray temp dirs) and its loops."""
        if self._sub is not None:
            self._sub.close()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        runners = list(self.runners.values())
        self.runners.clear()
        await asyncio.gather(*(r.stop() for r in runners), *self._removing.values(), return_exceptions=True)
        for runner in runners:      # Ray's session files of a stopped container; a restart starts a new session
            shutil.rmtree(runner.launch.temp_dir, ignore_errors=True)
        if self.tensorboards is not None:
            await self.tensorboards.close()
        if self._reaper is not None:
            if self._reaper.stdin is not None:  # start_watchdog gives it a pipe: closing it ends the watchdog
                self._reaper.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._reaper.wait(5)
            self._reaper = None

    def _reap_previous_run(self) -> None:
        """Kill pod processes a previous sandbox process left (it died without stopping them), then start
        the watchdog that does the same should this process die."""
        pods_dir = self.root / "pods"
        reap_all(pods_dir)
        pods_dir.mkdir(parents=True, exist_ok=True)
        self._reaper = start_watchdog(pods_dir)

    async def _watch(self, sub: Subscription, kick: asyncio.Event) -> None:
        async for event in sub:
            if event.resource not in CONTROL_KUBE:
                kick.set()

    async def _loop(self, kick: asyncio.Event) -> None:
        """One pass per burst of changes (and every `resync` seconds); a pass that took long spaces out the
        next one by as much, so a busy store does not keep the loop busy."""
        spent = 0.0
        while True:
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancel that lands as the wait ends,
            # and stop() would then wait forever.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.resync):
                    await kick.wait()
            await asyncio.sleep(max(0.05, spent))
            kick.clear()
            began = time.monotonic()
            try:
                self.reconcile()
            except Exception:
                log.exception("sandbox agent reconcile failed")
            spent = time.monotonic() - began

    # ----- one pass -----
    def reconcile(self) -> None:
        """One level-triggered pass over the whole store (lists are re-read only after this pass wrote)."""
        store = self.store
        self._workflow_controller()
        nodes, _ = store.list("nodes")
        jobs, rv = store.list("jobs")
        tasks, _ = store.list("tasks")
        self._job_controller(nodes, jobs, tasks)
        if store.resource_version != rv:
            tasks, rv = store.list("tasks")
        clusters = store.clusters()
        for cluster in clusters:
            self._cluster_agent(cluster, [n for n in nodes if dig(n, "metadata", "namespace") == cluster],
                                [t for t in tasks if dig(t, "metadata", "namespace") == cluster], tasks)
        pods_by_plane = {c: store.list("pods", DATA_NAMESPACE, plane=c)[0] for c in clusters}
        for cluster in clusters:
            self._write_hosts(cluster, tasks, pods_by_plane)
        if store.resource_version != rv:
            jobs, _ = store.list("jobs")
            tasks, _ = store.list("tasks")
        self._job_status(jobs, tasks)
        self._domains(pods_by_plane)

    # ----- Workflow controller (control plane) -----
    def _workflow_controller(self) -> None:
        found, _ = self.store.list("workflows")
        if not found:
            return
        jobs = {j["metadata"]["name"]: j for j in self.store.list("jobs")[0]}
        for workflow in found:
            if workflow["metadata"].get("deletionTimestamp"):
                continue
            status, create = workflows.next_state(workflow, jobs, now_iso())
            for job in create:
                self._create("jobs", job)
            if status is not None:
                self._set_status("workflows", workflow["metadata"]["name"], "", ROOT, status)

    # ----- Job controller (control plane) -----
    def _job_controller(self, nodes: list[dict], jobs: list[dict], tasks: list[dict]) -> None:
        by_name: dict[str, list[dict]] = {}
        by_job: dict[str, list[tuple]] = {}
        for task in tasks:
            meta = task["metadata"]
            by_name.setdefault(meta["name"], []).append(task)
            by_job.setdefault((meta.get("labels") or {}).get(keys.JOB_LABEL, ""), []).append(
                (meta["name"], meta.get("namespace"), meta.get("resourceVersion")))
        nodes_key = tuple(sorted((dig(n, "metadata", "namespace", default=""), dig(n, "metadata", "name", default=""),
                                  tuple(sorted((dig(n, "metadata", "labels") or {}).items()))) for n in nodes))
        for job in jobs:
            if job["metadata"].get("deletionTimestamp") or dig(job, "status", "phase") in plan.TERMINAL_JOB_PHASES:
                continue
            name = job["metadata"]["name"]
            key = (job["metadata"].get("resourceVersion"), nodes_key, tuple(sorted(by_job.get(name, []))))
            if self._synced.get(name) == key:
                continue                                # nothing this Job's Tasks depend on has changed
            self._synced[name] = key
            for desired in plan.desired_tasks(job, nodes):
                name, namespace = desired["metadata"]["name"], desired["metadata"]["namespace"]
                current = [t for t in by_name.get(name, []) if t["metadata"].get("namespace") == namespace]
                for stale in by_name.get(name, []):
                    if stale["metadata"].get("namespace") != namespace:
                        self._delete("tasks", name, stale["metadata"]["namespace"])
                if not current:
                    self._create("tasks", desired)
                elif plan.task_changed(current[0], desired):
                    updated = current[0]
                    meta = updated["metadata"]
                    for field in ("labels", "annotations"):
                        meta[field] = {**(meta.get(field) or {}), **desired["metadata"][field]}
                    meta["ownerReferences"] = desired["metadata"]["ownerReferences"]
                    updated["spec"] = desired["spec"]
                    meta.pop("resourceVersion", None)
                    self._update("tasks", updated)

    def _job_status(self, jobs: list[dict], tasks: list[dict]) -> None:
        by_job: dict[str, dict[str, tuple[str, str]]] = {}
        for t in tasks:
            owner = (t["metadata"].get("labels") or {}).get(keys.JOB_LABEL, "")
            by_job.setdefault(owner, {})[t["metadata"]["name"]] = (
                dig(t, "status", "phase", default="Pending"), dig(t, "status", "message", default=""))
        for job in jobs:
            if job["metadata"].get("deletionTimestamp"):
                continue
            name = job["metadata"]["name"]
            phases = by_job.get(name, {})
            key = (job["metadata"].get("resourceVersion"), tuple(sorted(phases.items())))
            if self._statused.get(name) == key:
                continue
            self._statused[name] = key
            status = plan.job_status(job, phases, now_iso())
            if status != job.get("status"):
                self._set_status("jobs", name, "", ROOT, status)

    # ----- cluster agent (one data plane) -----
    def _cluster_agent(self, cluster: str, nodes: list[dict], tasks: list[dict], all_tasks: list[dict]) -> None:
        pods, _ = self.store.list("pods", DATA_NAMESPACE, plane=cluster)
        managed = {t["metadata"]["name"]: t for t in tasks if plan.runs_here(t)}
        pods_by_task: dict[str, list[dict]] = {}
        for pod in pods:
            owner = dig(pod, "metadata", "annotations", plan.MANAGEMENT_TASK_ANNOTATION, default="")
            pods_by_task.setdefault(owner, []).append(pod)
        for owner, owned in pods_by_task.items():
            if owner not in managed:
                for pod in owned:
                    self._remove_pod(cluster, pod)
        for name, task in managed.items():
            owned = pods_by_task.get(name, [])
            if task["metadata"].get("deletionTimestamp"):
                self._finalize_task(cluster, task, owned)
                continue
            if FINALIZER not in (task["metadata"].get("finalizers") or []):
                self._mutate("tasks", name, task["metadata"]["namespace"], ROOT, _add_finalizer)
            self._sync_workload(cluster, task, owned)
        pods, _ = self.store.list("pods", DATA_NAMESPACE, plane=cluster)
        self._schedule(cluster, nodes, managed, pods)
        pods, _ = self.store.list("pods", DATA_NAMESPACE, plane=cluster)
        self._start_containers(cluster, managed, pods, all_tasks)
        self._node_usage(cluster, nodes, tasks, pods)
        self._mirror_pods(cluster, managed, pods)
        self._task_status(cluster, managed, pods)

    def _finalize_task(self, cluster: str, task: dict, owned: list[dict]) -> None:
        for pod in owned:
            self._remove_pod(cluster, pod)
        name = task["metadata"]["name"]
        service = f"{name}-ray-head"
        if self.store.get("services", service, DATA_NAMESPACE, cluster):
            self._delete("services", service, DATA_NAMESPACE, cluster)
        if self.proxies is not None:
            self.proxies.unregister(cluster, service)
        self._drop_ray_token(cluster, task)
        if not owned and not any(key[0] == cluster and key[1].startswith(f"{name}-") for key in self._removing):
            for mirror in self.store.list("pods", cluster, labels=f"{keys.TASK_NAME_LABEL}={name}")[0]:
                self._delete("pods", mirror["metadata"]["name"], cluster)
            self._mutate("tasks", name, task["metadata"]["namespace"], ROOT, _drop_finalizer)

    def _sync_workload(self, cluster: str, task: dict, owned: list[dict]) -> None:
        name = task["metadata"]["name"]
        spec = TaskSpec(task.get("spec"))
        want = spec.replicas
        live = [p for p in owned if not p["metadata"].get("deletionTimestamp")]
        for pod_name in plan.pods_to_delete(name, want, [p["metadata"]["name"] for p in live]):
            self._remove_pod(cluster, next(p for p in live if p["metadata"]["name"] == pod_name))
        existing = {p["metadata"]["name"]: bool(_ready(p)) for p in live}
        for pod_name in plan.statefulset_pods_to_create(name, want, existing):
            if (cluster, pod_name) not in self._removing:
                self._create("pods", self._pod_object(task, pod_name), plane=cluster)
        if not any(key[0] == cluster and key[1].startswith(f"{name}-") for key in self._removing):
            revisions = {p["metadata"]["name"]: (dig(p, "metadata", "labels", plan.REVISION_LABEL, default=""),
                                                 bool(_ready(p))) for p in live}
            stale = plan.pod_to_roll(name, plan.template_revision(task.get("spec") or {}), revisions)
            if stale is not None:
                self._remove_pod(cluster, next(p for p in live if p["metadata"]["name"] == stale))
        if _is_head(task) and want > 0:
            self._ensure_head_service(cluster, task)
        if want > 0:
            self._ensure_ray_token(cluster, task)
        elif self.proxies is not None:
            self.proxies.unregister(cluster, f"{name}-ray-head")

    def _ensure_head_service(self, cluster: str, task: dict) -> None:
        name = task["metadata"]["name"]
        service = f"{name}-ray-head"
        if self.store.get("services", service, DATA_NAMESPACE, cluster) is None:
            self._create("services", {
                "apiVersion": "v1", "kind": "Service",
                "metadata": {"name": service, "namespace": DATA_NAMESPACE, "labels": {"app": name}},
                "spec": {"clusterIP": "None", "publishNotReadyAddresses": True, "selector": {"app": name},
                         "ports": [{"name": n, "port": p, "targetPort": p, "protocol": "TCP"}
                                   for n, p in HEAD_SERVICE_PORTS]},
            }, plane=cluster)
        if self.proxies is not None:
            ports = self.ports.claim(f"{cluster}/{name}-0")
            self.proxies.register(cluster, service, DASHBOARD_PORT, f"http://{ports.ip}:{ports.dashboard}")
            self.proxies.register_pod(cluster, f"{name}-0", DASHBOARD_PORT, f"http://{ports.ip}:{ports.dashboard}")

    def _pod_env(self, task: dict, pod_name: str) -> list[dict]:
        spec = TaskSpec(task.get("spec"))
        env = []
        for entry in spec.env:
            if "value" in entry:
                env.append({"name": entry["name"], "value": str(entry["value"])})
            elif dig(entry, "valueFrom", "fieldRef", "fieldPath") == "metadata.name":
                env.append({"name": entry["name"], "value": pod_name})
            elif isinstance(ref := dig(entry, "valueFrom", "secretKeyRef"), dict):
                env.append({"name": entry["name"], "valueFrom": {"secretKeyRef": dict(ref)}})
        annotations = task["metadata"].get("annotations") or {}
        platform = {"RLARK_RAY_PORT": "6379"}
        if spec.prepare_script:
            platform["RLARK_PREPARE_SCRIPT"] = spec.prepare_script
        if _is_head(task) and spec.run_script:
            platform["RLARK_RUN_SCRIPT"] = spec.run_script
        ssh_key = spec.raw.get("sshPublicKey")
        if isinstance(ssh_key, str) and ssh_key:
            platform["RLARK_SSH_PUBLIC_KEY"] = ssh_key
        platform["RLARK_NODE_RANK_START"] = annotations.get(keys.RAY_RANK_START_ANNOTATION, "0")
        platform["POD_NAME"] = pod_name
        if _is_head(task):
            platform["RLARK_TOTAL_NODES"] = annotations.get(keys.RAY_TOTAL_NODES_ANNOTATION, "1")
            if spec.domain:
                platform["RLARK_DOMAIN"] = spec.domain
        else:
            head_task = annotations.get(keys.RAY_HEAD_TASK_ANNOTATION, "")
            if head_task:
                platform["RLARK_HEAD_ADDRESS"] = plan.head_address(head_task, spec.domain)
        env += [{"name": k, "value": v} for k, v in platform.items()]
        if _is_head(task):
            env.append({"name": "RLARK_NODE_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}})
        return env + self._ray_token_env(task)

    def _ray_token_env(self, task: dict) -> list[dict]:
        """Ray's token authentication on every Ray process of the Pod, the token from the Job's Secret (KubeRay's
        `authOptions`: `RAY_AUTH_MODE=token`, `RAY_AUTH_TOKEN` from the Secret)."""
        return [{"name": "RAY_AUTH_MODE", "value": "token"},
                {"name": "RAY_AUTH_TOKEN", "valueFrom": {"secretKeyRef": {"name": _token_secret(task),
                                                                          "key": RAY_TOKEN_KEY}}}]

    def _ensure_ray_token(self, cluster: str, task: dict) -> None:
        """The Job's token Secret in this data plane: one token per Job, the same in every cluster it spans."""
        name = _token_secret(task)
        if self.store.get("secrets", name, DATA_NAMESPACE, cluster) is not None:
            return
        token = None
        for other in self.store.clusters():
            found = self.store.get("secrets", name, DATA_NAMESPACE, other)
            if found is not None:
                token = (found.get("data") or {}).get(RAY_TOKEN_KEY)
                break
        if token is None:
            token = base64.b64encode(secrets.token_hex(32).encode()).decode()
        self._create("secrets", {
            "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": name, "namespace": DATA_NAMESPACE,
                         "labels": {keys.JOB_LABEL: _job_of(task)}},
            "data": {RAY_TOKEN_KEY: token}}, plane=cluster)

    def _drop_ray_token(self, cluster: str, task: dict) -> None:
        """The token Secret goes with the Job's last Task in this data plane."""
        job = _job_of(task)
        others = [t for t in self.store.list("tasks", cluster)[0] if _job_of(t) == job
                  and not t["metadata"].get("deletionTimestamp")]
        if not others and self.store.get("secrets", _token_secret(task), DATA_NAMESPACE, cluster) is not None:
            self._delete("secrets", _token_secret(task), DATA_NAMESPACE, cluster)

    def _resolve_env(self, cluster: str, pod: dict) -> dict[str, str]:
        """The container's environment as a kubelet makes it: `envFrom` Secrets first (each key a variable, with
        the entry's `prefix`; keys that are no variable name are skipped), then `env` over them: values, the
        downward API (`metadata.name`, `status.podIP`) and `secretKeyRef`s, all from this data plane's Secrets in
        the Pod's namespace (a missing one leaves the variable out)."""
        container = dig(pod, "spec", "containers", 0, default={}) or {}
        env: dict[str, str] = {}
        for entry in container.get("envFrom") or []:
            ref = entry.get("secretRef") if isinstance(entry, dict) else None
            if isinstance(ref, dict):
                prefix = str(entry.get("prefix") or "")
                for key, value in self._secret_data(cluster, ref.get("name")).items():
                    if _ENV_NAME.fullmatch(prefix + key):
                        env[prefix + key] = value
        for entry in container.get("env") or []:
            if "value" in entry:
                env[entry["name"]] = str(entry["value"])
                continue
            field = dig(entry, "valueFrom", "fieldRef", "fieldPath")
            ref = dig(entry, "valueFrom", "secretKeyRef")
            if field == "metadata.name":
                env[entry["name"]] = pod["metadata"]["name"]
            elif field == "status.podIP":
                env[entry["name"]] = dig(pod, "status", "podIP", default="")
            elif isinstance(ref, dict):
                found = self._secret_data(cluster, ref.get("name")).get(str(ref.get("key")))
                if found is not None:
                    env[entry["name"]] = found
        return env

    def _secret_data(self, cluster: str, name: object) -> dict[str, str]:
        """A Secret's `data` in this data plane's workload namespace, decoded (as the kubelet hands it to a
        container); empty when there is no such Secret."""
        secret = self.store.get("secrets", str(name), DATA_NAMESPACE, cluster) if isinstance(name, str) else None
        data = (secret or {}).get("data") or {}
        return {str(k): base64.b64decode(v).decode("utf-8", "replace") for k, v in data.items() if isinstance(v, str)}

    def _pod_object(self, task: dict, pod_name: str) -> dict:
        name = task["metadata"]["name"]
        spec = TaskSpec(task.get("spec"))
        head = _is_head(task)
        main = dict(spec.main_container)
        main.update({"name": CONTAINER, "command": ["bash", f"/rlark/scripts/{'ray_head' if head else 'ray_worker'}.sh"],
                     "env": self._pod_env(task, pod_name),
                     "securityContext": {"privileged": True}})
        annotations = {plan.MANAGEMENT_TASK_ANNOTATION: name,
                       plan.MANAGEMENT_NAMESPACE_ANNOTATION: task["metadata"]["namespace"]}
        if spec.domain:
            annotations[plan.MANAGEMENT_DOMAIN_ANNOTATION] = spec.domain
        pod_spec: dict[str, object] = {"containers": [main], "restartPolicy": "Always", "hostname": pod_name,
                    "nodeSelector": {k: v for k, v in spec.node_selector.items() if "," not in v}}
        if not head:
            pod_spec.update({"hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostNet"})
        return {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": pod_name, "namespace": DATA_NAMESPACE, "annotations": annotations,
                "labels": {"app": name, "statefulset.kubernetes.io/pod-name": pod_name,
                           "apps.kubernetes.io/pod-index": pod_name.rpartition("-")[2],
                           plan.REVISION_LABEL: plan.template_revision(task.get("spec") or {})},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": name,
                                     "uid": task["metadata"].get("uid", ""), "controller": True}],
            },
            "spec": pod_spec,
            "status": {"phase": "Pending", "qosClass": "BestEffort",
                       "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]},
        }

    def _schedule(self, cluster: str, nodes: list[dict], managed: dict[str, dict], pods: list[dict]) -> None:
        used: dict[str, dict[str, float]] = {}
        taken: dict[str, set[str]] = {}
        for pod in pods:
            node = dig(pod, "spec", "nodeName")
            task = managed.get(_owner(pod))
            if node and task is not None:
                used[node] = plan.used_resources([used.get(node, {}), plan.pod_requests(task["spec"])])
                taken.setdefault(task["metadata"]["name"], set()).add(node)
        for pod in pods:
            task = managed.get(_owner(pod))
            if task is None or dig(pod, "spec", "nodeName") or pod["metadata"].get("deletionTimestamp"):
                continue
            spec = TaskSpec(task["spec"])
            requests = plan.pod_requests(task["spec"])
            placement = plan.schedule(spec.node_selector, requests, nodes, used,
                                      taken.get(task["metadata"]["name"], set()))
            name = pod["metadata"]["name"]
            if placement.node is None:
                message = placement.message
                if dig(pod, "status", "conditions", 0, "message") != message:
                    self._mutate("pods", name, DATA_NAMESPACE, cluster, lambda p, m=message: _unschedulable(p, m))
                    self._event(cluster, pod, "Warning", "FailedScheduling", message, "default-scheduler")
                continue
            used[placement.node] = plan.used_resources([used.get(placement.node, {}), requests])
            taken.setdefault(task["metadata"]["name"], set()).add(placement.node)
            ip = self.ports.claim(f"{cluster}/{name}").ip
            self._mutate("pods", name, DATA_NAMESPACE, cluster, lambda p, n=placement.node, a=ip: _bind(p, n, a))
            self._event(cluster, pod, "Normal", "Scheduled",
                        f"Successfully assigned {DATA_NAMESPACE}/{name} to {placement.node}", "default-scheduler")

    def _start_containers(self, cluster: str, managed: dict[str, dict], pods: list[dict],
                          all_tasks: list[dict]) -> None:
        for pod in pods:
            key = (cluster, pod["metadata"]["name"])
            task = managed.get(_owner(pod))
            node = dig(pod, "spec", "nodeName")
            if task is None or not node or key in self.runners or key in self._removing:
                continue
            if pod["metadata"].get("deletionTimestamp"):
                continue
            image = TaskSpec(task["spec"]).image
            if image_fails_pull(image):
                self._image_pull_failure(cluster, pod, image, node)
                continue
            if not self.run_pods:
                continue
            self._event(cluster, pod, "Normal", "Pulled",
                        f'Container image "{image}" already present on machine', "kubelet", node)
            self._run(cluster, pod, task, image, all_tasks)

    def _image_pull_failure(self, cluster: str, pod: dict, image: str, node: str) -> None:
        if _waiting_reason(pod) == "ImagePullBackOff":
            return
        name = pod["metadata"]["name"]
        message = f'Back-off pulling image "{image}"'
        self._event(cluster, pod, "Normal", "Pulling", f'Pulling image "{image}"', "kubelet", node)
        self._event(cluster, pod, "Warning", "Failed",
                    f'Failed to pull image "{image}": rpc error: code = NotFound desc = failed to pull and unpack '
                    f'image "{image}": not found', "kubelet", node)
        self._event(cluster, pod, "Warning", "Failed", "Error: ErrImagePull", "kubelet", node)
        self._event(cluster, pod, "Normal", "BackOff", message, "kubelet", node)
        self._event(cluster, pod, "Warning", "Failed", "Error: ImagePullBackOff", "kubelet", node)
        status = {"name": CONTAINER, "image": image, "imageID": "", "ready": False, "started": False,
                  "restartCount": 0, "state": {"waiting": {"reason": "ImagePullBackOff", "message": message}}}
        self._mutate("pods", name, DATA_NAMESPACE, cluster, lambda p: _container_status(p, status, False))

    def _mount_storage(self, cluster: str, pod: dict, task: dict, node: str) -> None:
        """Each storage mount of `main` makes its storage class's bucket appear at the mount target for the Pod's
        processes: a symlink when the target path is free (one already linked to that bucket is kept); a target
        that is something else gets a FailedMount event, as a kubelet reports a mount it cannot set up."""
        spec = TaskSpec(task["spec"])
        for mount in spec.mounts:
            if mount["type"] != "storage" or not mount["target"].startswith("/"):
                continue
            storage_class = spec.pvc_storage_map.get(mount["source"]) or "default"
            bucket = self.state_dir / STORAGE_DIR / storage_class
            bucket.mkdir(parents=True, exist_ok=True)
            target = Path(mount["target"])
            try:
                if target.is_symlink() and target.resolve() == bucket.resolve():
                    continue
                if target.exists() or target.is_symlink():
                    raise FileExistsError(f"{target} exists and is not volume {mount['volume']}")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.symlink_to(bucket, target_is_directory=True)
            except OSError as exc:
                self._event(cluster, pod, "Warning", "FailedMount",
                            f'MountVolume.SetUp failed for volume "{mount["volume"]}" : {exc}', "kubelet", node)

    def _run(self, cluster: str, pod: dict, task: dict, image: str, all_tasks: list[dict]) -> None:
        name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
        head = _is_head(task)
        head_task = (task["metadata"].get("annotations") or {}).get(keys.RAY_HEAD_TASK_ANNOTATION, "")
        head_cluster = next((t["metadata"]["namespace"] for t in all_tasks
                             if t["metadata"]["name"] == head_task), cluster)
        ports = self.ports.claim(f"{cluster}/{name}")
        if dig(pod, "status", "podIP") != ports.ip:   # a sandbox restarted on this state dir hands out blocks anew
            with contextlib.suppress(NotFound):
                pod = self.store.mutate("pods", name, lambda p: _readdress(p, ports.ip), namespace=DATA_NAMESPACE,
                                        plane=cluster)
        env = self._resolve_env(cluster, pod)
        node = dig(pod, "spec", "nodeName", default="")
        workdir = self.root / "pods" / uid
        launch = Launch(
            cluster=cluster, pod=name, uid=uid, head=head, image=image, env=env,
            workdir=workdir, temp_dir=temp_dir_for(uid, str(self.state_dir)),
            ports=ports,
            head_ports=self.ports.claim(f"{head_cluster}/{head_task}-0") if head_task else self.ports.claim(
                f"{cluster}/{name}"),
            hosts_file=self.root / "hosts" / cluster,
            restart_count=int(dig(pod, "status", "containerStatuses", 0, "restartCount", default=0)),
            memory_limit=_memory_limit(pod), enter=self.network.enter(),
            gpu_bin=self._gpu_bin(cluster, node, uid, task, workdir))
        self._mount_storage(cluster, pod, task, node)
        runner = ContainerRunner(
            launch, self.logs, self.settings, self.root,
            on_status=lambda view: self._container_changed(cluster, name, uid, view),
            on_event=lambda kind, reason, message: self._event(
                cluster, self.store.get("pods", name, DATA_NAMESPACE, cluster) or pod, kind, reason, message,
                "kubelet", node))
        self.runners[(cluster, name)] = runner
        logdir = TaskSpec(task["spec"]).tensorboard_dir
        if head and logdir and self.tensorboards is not None:
            self.tensorboards.declare(cluster, name, uid, logdir, launch.ports.ip, launch.ports.tensorboard,
                                      self.root / "pods")
        runner.start()

    def _gpu_bin(self, cluster: str, node: str, uid: str, task: dict, workdir: Path) -> str:
        """The bin dir with the Pod's `nvidia-smi` (gpus.py) when its `main` requests GPUs, else ""."""
        count = int(plan.pod_requests(task.get("spec") or {}).get(keys.GPU_RESOURCE, 0))
        if count <= 0:
            return ""
        found = self.store.get("nodes", node, cluster) or {}
        model = (dig(found, "metadata", "annotations", default={}) or {}).get(keys.GPU_MODEL_ANNOTATION, "")
        return gpus.install_nvidia_smi(workdir / "gpu-bin", gpus.gpu_uuids(node, count, uid),
                                       gpus.gpu_memory_mib(model), workdir / "pgid")

    def pod_groups(self, cluster: str) -> dict[str, int]:
        """The process group of each running sandbox Pod of `cluster` (Pod name -> pgid)."""
        return {name: runner.pgid for (plane, name), runner in list(self.runners.items())
                if plane == cluster and runner.pgid is not None}

    def exec_target(self, cluster: str, name: str) -> ExecTarget | None:
        """Where an exec in that pod's running `main` runs: its working directory and environment."""
        runner = self.runners.get((cluster, name))
        if runner is None or runner.pgid is None:
            return None
        launch = runner.launch
        env = container_env(launch, self.settings, self.root)
        if image_has_ray(launch.image):
            # A real Pod's `ray status` finds its cluster in Ray's default temp dir; sandbox Pods each have their own.
            env["RAY_ADDRESS"] = f"{launch.head_ports.ip}:{launch.head_ports.gcs}"
        return ExecTarget(launch.workdir / "home", env, launch.workdir, self.network.enter())

    def _container_changed(self, cluster: str, name: str, uid: str, view: ContainerView) -> None:
        pod = self.store.get("pods", name, DATA_NAMESPACE, cluster)
        if pod is None or pod["metadata"].get("uid") != uid:
            return
        self._mutate("pods", name, DATA_NAMESPACE, cluster, lambda p: _container_status(p, view.status, view.ready))

    def _remove_pod(self, cluster: str, pod: dict) -> None:
        key = (cluster, pod["metadata"]["name"])
        if key in self._removing:
            return
        if not pod["metadata"].get("deletionTimestamp"):
            self._mutate("pods", key[1], DATA_NAMESPACE, cluster, _terminating)
        node = dig(pod, "spec", "nodeName", default="")
        if key in self.runners:
            self._event(cluster, pod, "Normal", "Killing", f"Stopping container {CONTAINER}", "kubelet", node)
        self._removing[key] = asyncio.get_running_loop().create_task(self._finish_removal(cluster, pod))

    async def _finish_removal(self, cluster: str, pod: dict) -> None:
        name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
        key = (cluster, name)
        try:
            runner = self.runners.pop(key, None)
            if runner is not None:
                await runner.stop()
            if self.tensorboards is not None:
                await self.tensorboards.forget(cluster, name)
            self.logs.remove_pod(cluster, DATA_NAMESPACE, name)
            shutil.rmtree(temp_dir_for(uid, str(self.state_dir)), ignore_errors=True)
            shutil.rmtree(self.root / "pods" / uid, ignore_errors=True)
            self.ports.release(f"{cluster}/{name}")
            if self.proxies is not None:
                self.proxies.unregister_pod(cluster, name)
            current = self.store.get("pods", name, DATA_NAMESPACE, cluster)
            if current is not None and current["metadata"].get("uid") == uid:
                self._delete("pods", name, DATA_NAMESPACE, cluster)
            events, _ = self.store.list("events", DATA_NAMESPACE, plane=cluster)
            for event in events:
                if dig(event, "involvedObject", "uid") == uid:
                    self._delete("events", event["metadata"]["name"], DATA_NAMESPACE, cluster)
        finally:
            self._removing.pop(key, None)
            if self._kick is not None:
                self._kick.set()

    def _node_usage(self, cluster: str, nodes: list[dict], tasks: list[dict], pods: list[dict]) -> None:
        tasks_by_name = {t["metadata"]["name"]: t for t in tasks}
        per_node: dict[str, list[dict[str, float]]] = {}
        for pod in pods:
            node = dig(pod, "spec", "nodeName")
            task = tasks_by_name.get(_owner(pod))
            if node and task is not None and dig(pod, "status", "phase") not in ("Succeeded", "Failed"):
                per_node.setdefault(node, []).append(plan.pod_requests(task.get("spec") or {}))
        for node in nodes:
            name = node["metadata"]["name"]
            used = {k: _quantity(v) for k, v in sorted(plan.used_resources(per_node.get(name, [])).items())}
            status = dict(node.get("status") or {})
            if status.get("used") != used or "phase" not in status:
                status["used"] = used
                status.setdefault("phase", "Online")
                self._set_status("nodes", name, cluster, ROOT, status)

    def _mirror_pods(self, cluster: str, managed: dict[str, dict], pods: list[dict]) -> None:
        if not managed:
            return
        selector = f"{keys.TASK_NAME_LABEL} in ({','.join(sorted(managed))})"
        mirrors, _ = self.store.list("pods", cluster, labels=selector)
        by_name = {m["metadata"]["name"]: m for m in mirrors}
        wanted = set()
        for pod in pods:
            task = managed.get(_owner(pod))
            if task is None:
                continue
            uid = pod["metadata"]["uid"]
            wanted.add(uid)
            phase = dig(pod, "status", "phase", default="Pending")
            status = {"phase": "Pending" if phase == "Unknown" else phase,
                      "node": dig(pod, "spec", "nodeName", default=""),
                      "ip": dig(pod, "status", "podIP", default="")}
            message = dig(pod, "status", "conditions", 0, "message", default="") if phase == "Pending" else ""
            if message:
                status["message"] = message
            mirror = {
                "apiVersion": "rlinf.io/v1alpha1", "kind": "Pod",
                "metadata": {"name": uid, "namespace": cluster, "labels": {
                    keys.TASK_NAME_LABEL: task["metadata"]["name"],
                    plan.LOCAL_POD_NAME_LABEL: pod["metadata"]["name"],
                    plan.LOCAL_POD_NAMESPACE_LABEL: DATA_NAMESPACE}},
                "spec": {"domain": TaskSpec(task["spec"]).domain, "taskNamespace": cluster,
                         "taskName": task["metadata"]["name"], "podNamespace": DATA_NAMESPACE,
                         "podName": pod["metadata"]["name"]},
            }
            current = by_name.get(uid)
            if current is None:
                created = self._create("pods", mirror)
                if created is not None:
                    self._set_status("pods", uid, cluster, ROOT, status)
            elif current.get("status") != status:
                self._set_status("pods", uid, cluster, ROOT, status)
        for name in by_name:
            if name not in wanted:
                self._delete("pods", name, cluster)

    def _task_status(self, cluster: str, managed: dict[str, dict], pods: list[dict]) -> None:
        events, _ = self.store.list("events", DATA_NAMESPACE, plane=cluster)
        for name, task in managed.items():
            if task["metadata"].get("deletionTimestamp"):
                continue
            spec = TaskSpec(task["spec"])
            owned = [p for p in pods if _owner(p) == name and not p["metadata"].get("deletionTimestamp")]
            ready = sum(1 for p in owned if _ready(p))
            want = spec.replicas
            phase = plan.task_phase(spec.workload_kind, want, ready, max(len(owned) - ready, 0))
            message = "" if phase in ("Running", "Stopped") else f"{ready}/{want} pods ready"
            status = dict(task.get("status") or {})
            status["phase"] = phase
            if message:
                status["message"] = message
            else:
                status.pop("message", None)
            status["observedNodes"] = sorted(dig(p, "spec", "nodeName") for p in owned
                                             if dig(p, "spec", "nodeName"))
            if phase == "Pending":
                uids = {p["metadata"]["uid"]: p["metadata"]["name"] for p in owned}
                status["events"] = _node_events(events, uids)
            else:
                status.pop("events", None)
            if status != task.get("status"):
                self._set_status("tasks", name, cluster, ROOT, status)

    def _write_hosts(self, cluster: str, all_tasks: list[dict], pods_by_plane: dict[str, list[dict]]) -> None:
        """Names the pods of this data plane resolve (the sandbox's /etc/hosts and cluster DNS): the head
        Services of this cluster, and `<pod>.rlark-domain` of every scheduled pod of a job with a domain, each
        to that Pod's IP."""
        lines = []
        for task in all_tasks:
            domain = TaskSpec(task.get("spec")).domain
            task_cluster = task["metadata"].get("namespace")
            local_head = task_cluster == cluster and _is_head(task)
            if not domain and not local_head:
                continue
            for pod in pods_by_plane.get(task_cluster, []):
                ip = dig(pod, "status", "podIP")
                if _owner(pod) != task["metadata"]["name"] or not dig(pod, "spec", "nodeName") or not ip:
                    continue
                if domain:
                    lines.append(f"{ip} {pod['metadata']['name']}{plan.DOMAIN_SUFFIX}")
                if local_head and pod["metadata"]["name"] == f"{task['metadata']['name']}-0":
                    lines.append(f"{ip} {task['metadata']['name']}-ray-head")
        text = "".join(f"{line}\n" for line in sorted(set(lines)))
        if self._hosts.get(cluster) != text:
            path = self.root / "hosts" / cluster
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(text)
            tmp.replace(path)
            self._hosts[cluster] = text

    def _domains(self, pods_by_plane: dict[str, list[dict]]) -> None:
        """Domain `status.ipAllocations`: one virtual IP of the Domain's CIDR per non-terminal pod in it
        (display only: inside the sandbox every `<pod>.rlark-domain` name resolves to this host)."""
        domains, _ = self.store.list("domains")
        for domain in domains:
            name = domain["metadata"]["name"]
            members = sorted(f"{cluster}/{DATA_NAMESPACE}/{pod['metadata']['name']}"
                             for cluster, pods in pods_by_plane.items() for pod in pods
                             if dig(pod, "metadata", "annotations", plan.MANAGEMENT_DOMAIN_ANNOTATION) == name
                             and dig(pod, "status", "phase") not in ("Succeeded", "Failed"))
            allocations = [{"ip": ip, "job": "", "task": "", "pod": pod}
                           for pod, ip in zip(members, _virtual_ips(dig(domain, "spec", "cidr", default="")))]
            status = dict(domain.get("status") or {})
            if status.get("ipAllocations", []) != allocations:
                status["ipAllocations"] = allocations
                self._set_status("domains", name, "", ROOT, status)

    # ----- events -----
    def _event(self, cluster: str, pod: dict, kind: str, reason: str, message: str, component: str,
               host: str = "") -> None:
        """Record a core/v1 Event about a data-plane pod; a repeat raises `count` of the existing one."""
        uid = pod["metadata"].get("uid", "")
        now = now_iso()
        events, _ = self.store.list("events", DATA_NAMESPACE, plane=cluster)
        for event in events:
            if (dig(event, "involvedObject", "uid") == uid and event.get("reason") == reason
                    and event.get("message") == message):
                def bump(e: dict) -> dict:
                    e["count"] = int(e.get("count", 1)) + 1
                    e["lastTimestamp"] = now
                    return e
                self._mutate("events", event["metadata"]["name"], DATA_NAMESPACE, cluster, bump)
                return
        source = {"component": component}
        if host:
            source["host"] = host
        self._create("events", {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{pod['metadata']['name']}.{uuid.uuid4().hex[:16]}", "namespace": DATA_NAMESPACE},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": DATA_NAMESPACE,
                               "name": pod["metadata"]["name"], "uid": uid},
            "reason": reason, "message": message, "type": kind, "count": 1,
            "firstTimestamp": now, "lastTimestamp": now, "source": source, "reportingComponent": component,
        }, plane=cluster)

    # ----- store helpers (a failed write is retried by the next pass) -----
    def _create(self, resource: str, obj: dict, plane: str = ROOT) -> dict | None:
        try:
            return self.store.create(resource, obj, plane=plane)
        except StoreError as exc:
            log.debug("agent create %s failed: %s", resource, exc)
            return None

    def _update(self, resource: str, obj: dict, plane: str = ROOT) -> None:
        with contextlib.suppress(StoreError):
            self.store.update(resource, obj, plane=plane)

    def _set_status(self, resource: str, name: str, namespace: str, plane: str, status: dict) -> None:
        def apply(obj: dict) -> dict:
            obj["status"] = status
            return obj
        self._mutate(resource, name, namespace, plane, apply)

    def _mutate(self, resource: str, name: str, namespace: str, plane: str, fn) -> None:
        with contextlib.suppress(NotFound):
            self.store.mutate(resource, name, fn, namespace=namespace, plane=plane)

    def _delete(self, resource: str, name: str, namespace: str = "", plane: str = ROOT) -> None:
        with contextlib.suppress(NotFound):
            self.store.delete(resource, name, namespace, plane)


# ----- pure helpers over pod dicts -----

def _virtual_ips(cidr: str):
    """Host addresses of a CIDR after the first (kept for the gateway), in order; none for a bad CIDR."""
    try:
        hosts = ipaddress.ip_network(cidr, strict=False).hosts()
    except ValueError:
        return
    next(hosts, None)
    for address in hosts:
        yield str(address)


def _job_of(task: dict) -> str:
    return (task["metadata"].get("labels") or {}).get(keys.JOB_LABEL, "")


def _token_secret(task: dict) -> str:
    return f"{_job_of(task) or task['metadata']['name']}-ray-token"


def _readdress(pod: dict, ip: str) -> dict:
    pod.setdefault("status", {}).update({"podIP": ip, "hostIP": ip, "podIPs": [{"ip": ip}]})
    return pod


def _owner(pod: dict) -> str:
    return dig(pod, "metadata", "annotations", plan.MANAGEMENT_TASK_ANNOTATION, default="")


def _is_head(task: dict) -> bool:
    return dig(task, "metadata", "annotations", keys.RAY_ROLE_ANNOTATION) == "head"


def _ready(pod: dict) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in dig(pod, "status", "conditions",
                                                                                   default=[]))


def _waiting_reason(pod: dict) -> str:
    return dig(pod, "status", "containerStatuses", 0, "state", "waiting", "reason", default="")


def _add_finalizer(task: dict) -> dict:
    task["metadata"]["finalizers"] = [*(task["metadata"].get("finalizers") or []), FINALIZER]
    return task


def _drop_finalizer(task: dict) -> dict | None:
    finalizers = task["metadata"].get("finalizers") or []
    if FINALIZER not in finalizers:
        return None
    task["metadata"]["finalizers"] = [f for f in finalizers if f != FINALIZER]
    return task


def _unschedulable(pod: dict, message: str) -> dict:
    pod.setdefault("status", {})["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message,
         "lastTransitionTime": now_iso()}]
    pod["status"]["phase"] = "Pending"
    return pod


def _memory_limit(pod: dict) -> int | None:
    """`resources.limits.memory` of the pod's `main` container in bytes, if it has a usable one."""
    for container in dig(pod, "spec", "containers", default=[]) or []:
        if isinstance(container, dict) and container.get("name") == CONTAINER:
            amount = parse_quantity(dig(container, "resources", "limits", "memory"))
            return int(amount) if amount and amount > 0 else None
    return None


def _bind(pod: dict, node: str, ip: str) -> dict:
    now = now_iso()
    pod["spec"]["nodeName"] = node
    pod["status"] = {"phase": "Pending", "qosClass": "BestEffort", "hostIP": ip, "podIP": ip,
                     "podIPs": [{"ip": ip}], "startTime": now,
                     "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
                                    {"type": "Initialized", "status": "True", "lastTransitionTime": now},
                                    {"type": "ContainersReady", "status": "False", "lastTransitionTime": now},
                                    {"type": "Ready", "status": "False", "lastTransitionTime": now}]}
    return pod


def _container_status(pod: dict, status: dict, ready: bool) -> dict:
    pod_status = pod.setdefault("status", {})
    pod_status["containerStatuses"] = [status]
    if "running" in status.get("state", {}) or pod_status.get("phase") == "Running":
        pod_status["phase"] = "Running"
    flag = "True" if ready else "False"
    for condition in pod_status.get("conditions") or []:
        if condition.get("type") in ("Ready", "ContainersReady") and condition.get("status") != flag:
            condition["status"] = flag
            condition["lastTransitionTime"] = now_iso()
    return pod


def _terminating(pod: dict) -> dict:
    pod["metadata"]["deletionTimestamp"] = now_iso()
    pod["metadata"]["deletionGracePeriodSeconds"] = 30
    return pod


def _node_events(events: list[dict], uids: dict[str, str]) -> list[dict]:
    """Task `status.events` while Pending: the pods' events, newest first, at most 100."""
    items = []
    for event in events:
        uid = dig(event, "involvedObject", "uid")
        if uid in uids:
            items.append({"type": event.get("type", "Normal"), "reason": event.get("reason", ""),
                          "message": event.get("message", ""), "lastTime": event.get("lastTimestamp", ""),
                          "count": int(event.get("count", 1)),
                          "source": dig(event, "source", "component", default=""),
                          "objectKind": "Pod", "objectName": uids[uid]})
    items.sort(key=lambda e: e["lastTime"], reverse=True)
    return items[:MAX_TASK_EVENTS]
