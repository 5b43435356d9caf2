"""The rlark config file (platformdirs) and the local state directory.

Owns where both live, how the config file is read, and how its secrets are hidden when shown.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs
import yaml

from rlark_tui.errors import UsageError

APP_NAME = "rlark"
CONFIG_ENV = "RLARK_CONFIG"
STATE_DIR_ENV = "RLARK_STATE_DIR"

EXAMPLE = """\
# rlark config: what the kubeconfig cannot say about an RLark installation.
gateway: https://rlark.example.com          # RLark gateway base URL (job logs fallback)
clusters:                                   # cluster namespace -> data-plane kubeconfig context
  rlark-gpu-a: gpu-a-admin
ray:
  token: <Ray dashboard token, if the dashboards use RAY_AUTH_MODE=token>
  urls:                                     # Job name -> Ray dashboard URL (instead of the service proxy)
    ppo-demo: http://127.0.0.1:8265
"""


def config_path() -> Path:
    """The config file: $RLARK_CONFIG, else the platform's user config dir."""
    override = os.environ.get(CONFIG_ENV)
    if override:
        return Path(override)
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.yaml"


def state_dir() -> Path:
    """Local state (saved submitted YAML, run-check records): $RLARK_STATE_DIR or the platform state dir."""
    override = os.environ.get(STATE_DIR_ENV)
    if override:
        return Path(override)
    return Path(platformdirs.user_state_dir(APP_NAME))


@dataclass(frozen=True)
class RlarkConfig:
    """What the config file says; every field is optional. `ray_token` is never printed (`rlark config` says
    only whether it is set)."""

    path: Path
    exists: bool = False
    gateway: str | None = None
    clusters: dict[str, str] = field(default_factory=dict)
    ray_token: str | None = None
    ray_urls: dict[str, str] = field(default_factory=dict)


def load_config(path: Path | None = None) -> RlarkConfig:
    """Read the config file; a missing file is an empty config, a broken one a UsageError."""
    path = path or config_path()
    if not path.exists():
        return RlarkConfig(path=path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise UsageError(f"config file {path}: cannot read it ({_first_line(exc)})") from None
    if not isinstance(data, dict):
        raise UsageError(f"config file {path}: the top level must be a mapping")
    clusters = _string_map(path, data.get("clusters"), "clusters", nested_key="context")
    ray = data.get("ray") or {}
    if not isinstance(ray, dict):
        raise UsageError(f"config file {path}: `ray` must be a mapping")
    gateway = data.get("gateway")
    token = ray.get("token")
    if gateway is not None and not isinstance(gateway, str):
        raise UsageError(f"config file {path}: `gateway` must be a URL string")
    if token is not None and not isinstance(token, str):
        raise UsageError(f"config file {path}: `ray.token` must be a string")
    return RlarkConfig(
        path=path,
        exists=True,
        gateway=gateway.rstrip("/") if gateway else None,
        clusters=clusters,
        ray_token=token or None,
        ray_urls=_string_map(path, ray.get("urls"), "ray.urls"),
    )


def _string_map(path: Path, value, name: str, nested_key: str | None = None) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise UsageError(f"config file {path}: `{name}` must be a mapping")
    result = {}
    for key, item in value.items():
        if nested_key and isinstance(item, dict):
            item = item.get(nested_key)
        if not isinstance(item, str):
            raise UsageError(f"config file {path}: `{name}.{key}` must be a string")
        result[str(key)] = item
    return result


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
