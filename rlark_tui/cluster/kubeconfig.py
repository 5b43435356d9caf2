"""Finding and loading kubeconfig contexts the way kubectl does (--kubeconfig, $KUBECONFIG, ~/.kube/config, in-cluster).

Owns the kubernetes client configuration per context and the RLark hints a kubeconfig can carry in `extensions`.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

import urllib3
import yaml
from kubernetes import client as k8s
from kubernetes.config import ConfigException
from kubernetes.config.incluster_config import load_incluster_config
from kubernetes.config.kube_config import KubeConfigMerger, load_kube_config

from rlark_tui.errors import UsageError
from rlark_tui.model.redact import redact_text

IN_CLUSTER = "in-cluster"
_SEPARATOR = ";" if os.name == "nt" else ":"
WRONG_TYPE = "not a kubeconfig (a section or entry has the wrong type)"


@dataclass(frozen=True)
class Kubeconfig:
    """The merged kubeconfig: where it came from, its contexts and the RLark hints in its extensions."""

    paths: tuple[Path, ...]
    contexts: dict[str, dict]
    current_context: str | None
    gateway: str | None = None
    data_planes: dict[str, str] = field(default_factory=dict)
    """Cluster namespace (`rlark-<id>`) -> kubeconfig context of that data plane."""

    @property
    def in_cluster(self) -> bool:
        return not self.paths


def kubeconfig_paths(flag: str | None) -> list[Path]:
    """--kubeconfig wins, then $KUBECONFIG (a path list), then ~/.kube/config; only files that exist count."""
    if flag:
        path = Path(flag).expanduser()
        if not path.is_file():
            raise UsageError(f"kubeconfig {flag}: no such file")
        return [path]
    env = os.environ.get("KUBECONFIG")
    if env:
        return [Path(p).expanduser() for p in env.split(_SEPARATOR) if p and Path(p).expanduser().is_file()]
    default = Path("~/.kube/config").expanduser()
    return [default] if default.is_file() else []


def load(flag: str | None = None) -> Kubeconfig:
    """Read and merge the kubeconfig files; with none, fall back to in-cluster config when inside a pod."""
    paths = kubeconfig_paths(flag)
    if not paths:
        if os.environ.get("KUBERNETES_SERVICE_HOST"):
            return Kubeconfig(paths=(), contexts={IN_CLUSTER: {}}, current_context=IN_CLUSTER)
        raise UsageError("no kubeconfig found: pass --kubeconfig, set KUBECONFIG, or start a sandbox "
                         "with `rlark sandbox` (or `rlark demo`)")
    try:
        merged = _plain(KubeConfigMerger(_SEPARATOR.join(str(p) for p in paths)).config.value)
    except (OSError, ValueError, ConfigException, yaml.YAMLError) as exc:
        raise UsageError(f"kubeconfig {paths[0]}: cannot read it ({_first_line(exc)})") from None
    except (TypeError, AttributeError, KeyError):
        raise UsageError(f"kubeconfig {paths[0]}: {WRONG_TYPE}") from None
    if not isinstance(merged, dict):
        raise UsageError(f"kubeconfig {paths[0]}: not a kubeconfig mapping")
    contexts = {}
    try:
        for entry in merged.get("contexts") or []:
            if isinstance(entry, dict) and entry.get("name"):
                context = entry.get("context") or {}
                contexts[str(entry["name"])] = context if isinstance(context, dict) else {}
        gateway, data_planes = _rlark_extensions(merged, contexts)
    except (TypeError, AttributeError):
        raise UsageError(f"kubeconfig {paths[0]}: {WRONG_TYPE}") from None
    return Kubeconfig(
        paths=tuple(paths),
        contexts=contexts,
        current_context=_first_current_context(paths) or merged.get("current-context") or None,
        gateway=gateway,
        data_planes=data_planes,
    )


def resolve_context(kubeconfig: Kubeconfig, context: str | None) -> str:
    """The context to use: the flag, else current-context; an unknown name is a usage error."""
    name = context or kubeconfig.current_context
    if not name:
        raise UsageError(f"kubeconfig {kubeconfig.paths[0]} has no current-context: pass --context "
                         f"(contexts: {', '.join(sorted(kubeconfig.contexts)) or 'none'})")
    if name not in kubeconfig.contexts:
        raise UsageError(f"context {name!r} is not in the kubeconfig "
                         f"(contexts: {', '.join(sorted(kubeconfig.contexts)) or 'none'})")
    return name


class _RedactedRecords(logging.Filter):
    """The kubernetes client logs exec-plugin failures, with the plugin's stderr, on the root logger: redact them."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = redact_text(record.getMessage()), ()
        return True


_REDACTED_RECORDS = _RedactedRecords()


def api_client(kubeconfig: Kubeconfig, context: str) -> k8s.ApiClient:
    """A kubernetes ApiClient for one context; no urllib3 retries (errors surface at once, callers back off)."""
    configuration = k8s.Configuration()
    if _REDACTED_RECORDS not in logging.getLogger().filters:
        logging.getLogger().addFilter(_REDACTED_RECORDS)
    try:
        if kubeconfig.in_cluster:
            load_incluster_config(client_configuration=configuration)
        else:
            load_kube_config(config_file=_SEPARATOR.join(str(p) for p in kubeconfig.paths), context=context,
                             client_configuration=configuration, persist_config=False)
    except (ConfigException, OSError, ValueError, yaml.YAMLError) as exc:
        raise UsageError(f"context {context}: unusable kubeconfig entry ({_first_line(exc)})") from None
    except (TypeError, AttributeError, KeyError):
        raise UsageError(f"context {context}: unusable kubeconfig entry ({WRONG_TYPE})") from None
    configuration.retries = urllib3.Retry(total=0, connect=0, read=0, redirect=0, status=0, raise_on_status=False)
    return k8s.ApiClient(configuration)


def namespace_of(kubeconfig: Kubeconfig, context: str) -> str | None:
    """The namespace the context names, if any (kubectl's default for namespaced lists)."""
    value = kubeconfig.contexts.get(context, {}).get("namespace")
    return str(value) if value else None


def _rlark_extensions(merged: dict, contexts: dict[str, dict]) -> tuple[str | None, dict[str, str]]:
    """Read RLark hints from any extension whose name mentions rlark (top level, preferences or contexts)."""
    gateway: str | None = None
    planes: dict[str, str] = {}
    sources = list(merged.get("extensions") or [])
    sources += list((merged.get("preferences") or {}).get("extensions") or [])
    for ctx in contexts.values():
        sources += list(ctx.get("extensions") or [])
    for entry in sources:
        if not isinstance(entry, dict) or "rlark" not in str(entry.get("name", "")).lower():
            continue
        ext = entry.get("extension")
        if not isinstance(ext, dict):
            continue
        value = ext.get("gateway") or ext.get("gatewayURL") or ext.get("gatewayUrl")
        if isinstance(value, str) and value and gateway is None:
            gateway = value.rstrip("/")
        for key in ("dataPlanes", "dataPlaneContexts", "clusters", "data_planes"):
            mapping = ext.get(key)
            if isinstance(mapping, dict):
                for cluster, ctx in mapping.items():
                    if isinstance(ctx, dict):
                        ctx = ctx.get("context")
                    if isinstance(ctx, str):
                        planes.setdefault(str(cluster), ctx)
            elif isinstance(mapping, list):
                for item in mapping:
                    if isinstance(item, dict) and isinstance(item.get("context"), str):
                        cluster = item.get("cluster") or item.get("namespace") or item.get("name")
                        if cluster:
                            planes.setdefault(str(cluster), item["context"])
    return gateway, planes


def _first_current_context(paths: list[Path]) -> str | None:
    """kubectl's rule: the first file that sets current-context wins."""
    for path in paths:
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
        if isinstance(data, dict) and data.get("current-context"):
            return str(data["current-context"])
    return None


def _plain(value):
    """The merger wraps merged list entries in ConfigNode; unwrap to plain dicts and lists."""
    value = getattr(value, "value", value)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
