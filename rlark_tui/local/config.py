"""The rlark config file (platformdirs) and the local state directory.

Owns where both live, how the config file is read, and how its secrets are hidden when shown.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from rlark_tui.alerting.thresholds import Thresholds, thresholds_from
from rlark_tui.errors import UsageError
from rlark_tui.local.fsutil import read_own, read_settings, write_private
from rlark_tui.model.views import ViewSettings, parse_views, views_text
from rlark_tui.text.parse import YamlBound, load_yaml

APP_NAME = "rlark"
MAX_CONFIG_BYTES = 1024 * 1024
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""A config file larger than this is refused (a real one is a few KiB)."""
CONFIG_ENV = "RLARK_CONFIG"
STATE_DIR_ENV = "RLARK_STATE_DIR"
SERVER_KEYS = ("server-address", "server-hostname", "client-cert", "client-key", "ca-cert",
               "server-insecure-skip-tls-verify")
"""rlark-server settings: config keys named like the global flags (rlarkctl's names); `_` may stand for `-`."""

EXAMPLE = """\
# rlark config: what the kubeconfig cannot say about an RLark installation.
gateway: https://rlark.example.com          # RLark gateway base URL (job logs fallback)
gateway_ca: /etc/rlark/gateway-ca.pem       # CA of the gateway's certificate (default: the system's CAs)
gateway_headers:                            # sent with every gateway request (values are never shown)
  X-Auth-Token: <token of an authenticating proxy in front of the gateway>
# rlark-server (mutual TLS; logs, events, Ray). Default: the kubeconfig extension, else discovery.
server-address: https://rlark-server.example.com:8443
ca-cert: /etc/rlark/ca.pem                  # the platform CA; or server-insecure-skip-tls-verify: true
client-cert: ~/.rlark/client.crt            # default: Secret rlark-admin-cert through the control plane
client-key: ~/.rlark/client.key
server-hostname: rlark-server               # the name in the server's certificate, when the address differs
clusters:                                   # cluster namespace -> data-plane kubeconfig context (explicit only)
  rlark-gpu-a: gpu-a-admin
ray:
  token: <Ray dashboard token, if the dashboards use RAY_AUTH_MODE=token>
  urls:                                     # Job name -> Ray dashboard URL (instead of the service proxy)
    ppo-demo: http://127.0.0.1:8265
alerts:                                     # thresholds of the alert rules (also `rlark watch` flags)
  start_seconds: 900                        # run script started, no progress row yet (start-stalled)
  unschedulable_seconds: 120                # a Pod Pending and unscheduled this long (pod-unschedulable)
  stall_factor: 3                           # progress-stalled after max(stall_factor x step time,
  stall_min_seconds: 300                    #   stall_min_seconds) without a new progress row
  gpu_idle_percent: 5                       # every GPU of a Running Pod below this ...
  gpu_idle_seconds: 600                     #   ... this long (gpu-idle)
  ray_missing_seconds: 60                   # Ray alive nodes below the expected count (ray-nodes-missing)
  source_seconds: 60                        # a data plane or the gateway unreachable (source-unreachable)
  bell: true                                # the TUI rings the terminal bell on a new warning/critical alert
  notify: false                             # and sends an OSC 9/777 desktop notification
"""


class NoHome(UsageError):
    """No user directory to keep rlark's files in: HOME unset and the user in no passwd entry (a container's
    arbitrary uid, `env -i`), where platformdirs raises RuntimeError."""


def _user_dir(kind: str, override: str) -> Path:
    import platformdirs  # here: with the override set it is not needed (start-up time of `rlark get`)

    try:
        return Path(getattr(platformdirs, f"user_{kind}_dir")(APP_NAME))
    except RuntimeError:
        raise NoHome(f"rlark cannot tell where to keep its {kind} (HOME is not set and this user has no home in the "
                     f"passwd database): set HOME, XDG_{kind.upper()}_HOME or {override}") from None


def config_path() -> Path:
    """The config file: $RLARK_CONFIG, else the platform's user config dir (NoHome when there is none)."""
    override = os.environ.get(CONFIG_ENV)
    if override:
        return Path(override)
    return _user_dir("config", CONFIG_ENV) / "config.yaml"


def state_dir() -> Path:
    """Local state (saved submitted YAML, run-check records): $RLARK_STATE_DIR or the platform state dir (NoHome
    when there is none)."""
    override = os.environ.get(STATE_DIR_ENV)
    if override:
        return Path(override)
    return _user_dir("state", STATE_DIR_ENV)


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
    gateway_ca: str | None = None
    gateway_headers: dict[str, str] = field(default_factory=dict)
    """Header name -> value, sent to the gateway; values are secrets (shown as ***)."""
    server: dict[str, str | bool] = field(default_factory=dict)
    """SERVER_KEYS that are set (strings; the skip-verify key a bool)."""
    alerts: Thresholds = field(default_factory=Thresholds)
    """The `alerts:` section: thresholds of the alert rules, the bell and desktop notifications."""
    theme: str = ""
    """The TUI's theme (`theme:` dark or light; `--theme` wins)."""


def load_config(path: Path | None = None) -> RlarkConfig:
    """Read the config file; a missing file is an empty config (no user directory to hold one too: NoHome), a
    broken one a UsageError."""
    if path is None:
        try:
            path = config_path()
        except NoHome:
            return RlarkConfig(path=Path("~", ".config", APP_NAME, "config.yaml"))
    try:
        text = read_settings(path, "config file", MAX_CONFIG_BYTES).decode("utf-8")
    except FileNotFoundError:
        return RlarkConfig(path=path)
    except UnicodeDecodeError as exc:
        raise UsageError(f"config file {path}: cannot read it ({_first_line(exc)})") from None
    try:
        data = load_yaml(text, _YAML_LOADER) or {}
    except yaml.YAMLError as exc:
        raise UsageError(f"config file {path}: cannot read it ({_first_line(exc)})") from None
    except YamlBound as exc:
        raise UsageError(f"config file {path}: {exc}") from None
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
    if token and not (token.isascii() and token.isprintable()):  # a header value, as raydash/token.py reads one
        raise UsageError(f"config file {path}: `ray.token` must be printable ASCII")
    try:
        alerts = thresholds_from(data.get("alerts"))
    except ValueError as exc:
        raise UsageError(f"config file {path}: {exc}") from None
    gateway_ca = data.get("gateway_ca")
    if gateway_ca is not None and not isinstance(gateway_ca, str):
        raise UsageError(f"config file {path}: `gateway_ca` must be a file path")
    return RlarkConfig(
        path=path,
        exists=True,
        gateway=gateway.rstrip("/") if gateway else None,
        clusters=clusters,
        ray_token=token or None,
        ray_urls=_string_map(path, ray.get("urls"), "ray.urls"),
        gateway_ca=str(Path(gateway_ca).expanduser()) if gateway_ca else None,
        gateway_headers=_string_map(path, data.get("gateway_headers"), "gateway_headers"),
        server=_server_keys(path, data),
        alerts=alerts,
        theme=_theme(path, data.get("theme")),
    )


THEMES = ("dark", "light")


def _theme(path: Path, value: object) -> str:
    if value is None:
        return ""
    if value not in THEMES:
        raise UsageError(f"config file {path}: `theme` must be one of {', '.join(THEMES)}, not {value!r}"[:300])
    return str(value)


def _server_keys(path: Path, data: dict) -> dict[str, str | bool]:
    found: dict[str, str | bool] = {}
    for key in SERVER_KEYS:
        value = data.get(key, data.get(key.replace("-", "_")))
        if value is None:
            continue
        if key == "server-insecure-skip-tls-verify":
            if not isinstance(value, bool):
                raise UsageError(f"config file {path}: `{key}` must be true or false")
        elif not isinstance(value, str) or not value:
            raise UsageError(f"config file {path}: `{key}` must be a string")
        elif key in ("client-cert", "client-key", "ca-cert"):
            value = str(Path(value).expanduser())
        found[key] = value
    return found


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


# ---- view settings per context (issue 36 item 6) -------------------------------------------------------------
VIEWS_DIR = "views"
MAX_VIEWS_BYTES = 64 * 1024


def views_path(context: str) -> Path:
    """A context's view settings: `views/<context>-<hash>.json` beside the config file (the name made safe for a
    file, the hash keeping apart contexts that only differ where it was not)."""
    from rlark_tui.text.sinks import keyed_name
    return config_path().parent / VIEWS_DIR / f"{keyed_name(context, 80)}.json"


def load_views(context: str) -> tuple[ViewSettings, str]:
    """The context's view settings and '' (none saved: the defaults), or the defaults and one line saying why the
    file could not be used (not readable, larger than MAX_VIEWS_BYTES, not in the shape rlark writes)."""
    try:
        path = views_path(context)
    except NoHome as exc:
        return ViewSettings(), f"{exc}; the default view is shown"
    if not path.exists():
        return ViewSettings(), ""
    try:
        return parse_views(read_own(path, MAX_VIEWS_BYTES).decode("utf-8")), ""
    except OSError as exc:
        why = f"view settings {path}: {exc.strerror or exc}"
    except (UnicodeDecodeError, ValueError) as exc:
        why = f"view settings {path}: {_first_line(exc)}"
    return ViewSettings(), f"{why}; the default view is shown (the next change replaces the file)"


def save_views(context: str, settings: ViewSettings) -> None:
    """Write the context's view settings (0600, through fsutil's one writer)."""
    write_private(views_path(context), views_text(settings), durable=False)
