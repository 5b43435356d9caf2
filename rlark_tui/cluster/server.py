"""rlark-server: where it is and how rlark reaches it (flags and config keys, kubeconfig extension, discovery).

Owns resolving its address, client certificate and CA in that order (as the platform CLI rlarkctl finds them), the
0600 runtime files a certificate read from the control plane needs (Python's ssl wants paths), and the kubernetes
ApiClient that speaks mutual TLS to it.
"""

from __future__ import annotations

import atexit
import base64
import ipaddress
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urlsplit

import urllib3
from kubernetes import client as k8s

from rlark_tui.cluster.errors import ApiError, NotFound, Request, Unreachable
from rlark_tui.config import SERVER_KEYS, RlarkConfig
from rlark_tui.errors import UsageError
from rlark_tui.fsutil import write_private

DEFAULT_PORT = 8443
ADMIN_CERT_SECRET = "rlark-admin-cert"
LEASE_PREFIX = "rlark-server-peer-"
NO_CA = ("no CA to verify rlark-server {url}: pass --ca-cert FILE (the platform CA), or "
         "--server-insecure-skip-tls-verify to skip verifying it")


@dataclass(frozen=True)
class ServerOptions:
    """What the user set for rlark-server: flags win over config keys; `origins` says where each came from."""

    values: dict[str, str | bool] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_sources(cls, args, config: RlarkConfig) -> "ServerOptions":
        values: dict[str, str | bool] = {}
        origins: dict[str, str] = {}
        for key in SERVER_KEYS:
            flag = getattr(args, key.replace("-", "_"), None) if args is not None else None
            if flag:
                values[key], origins[key] = (str(Path(flag).expanduser()) if key in _FILES else flag), f"--{key}"
            elif key in config.server:
                values[key], origins[key] = config.server[key], f"config file {config.path}"
        if ("client-cert" in values) != ("client-key" in values):
            raise UsageError("rlark-server needs a certificate and its key: pass --client-cert with --client-key")
        return cls(values, origins)

    def get(self, key: str) -> str | None:
        value = self.values.get(key)
        return value if isinstance(value, str) else None

    @property
    def insecure(self) -> bool:
        return self.values.get("server-insecure-skip-tls-verify") is True

    @property
    def complete(self) -> bool:
        """An address with a host plus a certificate: enough without any kubeconfig (server-only mode)."""
        address = self.get("server-address")
        return bool(address and urlsplit(_with_scheme(address)).hostname and self.get("client-cert"))


_FILES = ("client-cert", "client-key", "ca-cert")


@dataclass(frozen=True)
class ServerEndpoint:
    """A resolved rlark-server: URL, credentials, verification, and where each came from (for `rlark config`)."""

    url: str
    cert_file: str
    key_file: str
    ca_file: str | None
    insecure: bool
    hostname: str | None
    url_origin: str
    cert_origin: str
    ca_origin: str
    lease_ip: str = ""
    """Set when the address came from a Lease: an unreachable Pod IP then says to pass --server-address."""

    @property
    def verified(self) -> bool:
        return not self.insecure

    def describe(self) -> str:
        check = "UNVERIFIED (--server-insecure-skip-tls-verify)" if self.insecure else f"CA from {self.ca_origin}"
        return f"{self.url}  [address: {self.url_origin}; certificate: {self.cert_origin}; {check}]"


class RuntimeFiles:
    """A private directory (0700) of 0600 files for key material read from the control plane, removed on exit."""

    def __init__(self) -> None:
        self._dir: Path | None = None
        self._lock = threading.Lock()

    def write(self, name: str, data: bytes) -> str:
        with self._lock:
            if self._dir is None:
                self._dir = Path(tempfile.mkdtemp(prefix="rlark-server-"))
                atexit.register(self.remove)
            path = self._dir / name
            write_private(path, data, durable=False)
            return str(path)

    def remove(self) -> None:
        with self._lock:
            if self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)
                self._dir = None


def resolve(options: ServerOptions, extension: dict | None, control, namespace: str,
            files: RuntimeFiles) -> ServerEndpoint:
    """rlark-server in the issue's order: flags and config keys, then the kubeconfig extension, then discovery
    through the control plane `control` (an Http, or None in server-only mode): Secret `rlark-admin-cert` in
    `namespace` for the certificate, a live Lease `rlark-server-peer-*` for the address. Raises Unreachable
    (kind "config") with one line saying what to pass."""
    extension = extension if isinstance(extension, dict) else {}
    url, url_origin, lease_ip = _address(options, extension, control, namespace)
    cert, key, cert_origin = _certificate(options, control, namespace, files)
    ca, ca_origin = options.get("ca-cert"), options.origins.get("ca-cert", "")
    if ca is None and extension.get("certificate-authority-data"):
        try:
            ca = files.write("ca.crt", base64.b64decode(str(extension["certificate-authority-data"])))
        except ValueError:
            raise Unreachable("the kubeconfig's rlark.io/server extension has a certificate-authority-data that "
                              "is not base64", "config") from None
        ca_origin = "kubeconfig extension"
    if ca is None and not options.insecure:
        raise Unreachable(NO_CA.format(url=url), "config")
    for path, what in ((cert, "--client-cert"), (key, "--client-key"), (ca, "--ca-cert")):
        if path is not None and not Path(path).is_file():
            raise Unreachable(f"{what} {path}: no such file", "config")
    _check_validity(cert, cert_origin)
    return ServerEndpoint(url, cert, key, None if options.insecure else ca, options.insecure,
                          options.get("server-hostname"), url_origin, cert_origin, ca_origin or "(none)", lease_ip)


def api_client(endpoint: ServerEndpoint, host: str) -> k8s.ApiClient:
    """A kubernetes ApiClient for `host` (a URL under the server) with the client certificate; no retries."""
    configuration = k8s.Configuration()
    configuration.host = host
    configuration.cert_file = endpoint.cert_file
    configuration.key_file = endpoint.key_file
    configuration.ssl_ca_cert = endpoint.ca_file
    configuration.verify_ssl = endpoint.verified
    if endpoint.hostname:
        configuration.tls_server_name = endpoint.hostname
    if endpoint.insecure:
        urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
    configuration.retries = urllib3.Retry(total=0, connect=0, read=0, redirect=0, status=0, raise_on_status=False)
    return k8s.ApiClient(configuration)


def agent_id(cluster_namespace: str) -> str:
    """The agent ID rlark-server routes by: the cluster namespace without `rlark-` (`rlark-gpu-a` -> `gpu-a`)."""
    return cluster_namespace.removeprefix("rlark-")


def live_lease_ips(leases: list[dict], now: datetime) -> list[str]:
    """The IPs of live `rlark-server-peer-*` Leases (holderIdentity `<ip>/<peer>/<token>`; only the IP is kept)."""
    found = []
    for lease in leases:
        meta = lease.get("metadata") or {}
        spec = lease.get("spec") or {}
        if not str(meta.get("name", "")).startswith(LEASE_PREFIX):
            continue
        holder, duration, renewed = spec.get("holderIdentity"), spec.get("leaseDurationSeconds"), spec.get("renewTime")
        if not isinstance(holder, str) or not isinstance(duration, int) or not isinstance(renewed, str):
            continue
        try:
            renew = datetime.fromisoformat(renewed.replace("Z", "+00:00"))
        except ValueError:
            continue
        if (now - renew).total_seconds() > duration:
            continue
        ip = holder.partition("/")[0]
        if _is_ip(ip):
            found.append(ip)
    return found


def _address(options: ServerOptions, extension: dict, control, namespace: str) -> tuple[str, str, str]:
    given = options.get("server-address")
    parts = urlsplit(_with_scheme(given)) if given else None
    if parts is not None and parts.hostname:
        return _with_scheme(given).rstrip("/"), options.origins["server-address"], ""
    if extension.get("server"):
        return str(extension["server"]).rstrip("/"), "kubeconfig extension", ""
    if control is None:
        raise Unreachable("no rlark-server address: pass --server-address", "config")
    port = (parts.port if parts is not None else None) or DEFAULT_PORT
    try:
        body = control.json("GET", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases",
                            Request("list", "leases", namespace=namespace), timeout=10)
    except ApiError as exc:
        raise Unreachable(f"no rlark-server address (cannot list its Leases: {exc}); pass --server-address",
                          "config") from None
    items = body.get("items") if isinstance(body, dict) else None
    ips = live_lease_ips([i for i in items or [] if isinstance(i, dict)], datetime.now(timezone.utc))
    if not ips:
        raise Unreachable(f"no rlark-server address: no live Lease {LEASE_PREFIX}* in namespace {namespace}; "
                          "pass --server-address", "config")
    ip = ips[0]
    host = f"[{ip}]" if ":" in ip else ip
    return f"https://{host}:{port}", f"Lease {LEASE_PREFIX}* in {namespace} (IP {ip})", ip


def _certificate(options: ServerOptions, control, namespace: str, files: RuntimeFiles) -> tuple[str, str, str]:
    cert, key = options.get("client-cert"), options.get("client-key")
    if cert and key:
        return cert, key, options.origins["client-cert"]
    if control is None:
        raise Unreachable("no client certificate for rlark-server: pass --client-cert and --client-key", "config")
    try:
        secret = control.json("GET", f"/api/v1/namespaces/{namespace}/secrets/{ADMIN_CERT_SECRET}",
                              Request("get", "secrets", ADMIN_CERT_SECRET, namespace), timeout=10)
    except NotFound:
        raise Unreachable(f"no client certificate for rlark-server: Secret {namespace}/{ADMIN_CERT_SECRET} does "
                          "not exist; pass --client-cert and --client-key", "config") from None
    except ApiError as exc:
        raise Unreachable(f"no client certificate for rlark-server ({exc}); pass --client-cert and --client-key",
                          "config") from None
    data = secret.get("data") if isinstance(secret, dict) else None
    try:
        crt = base64.b64decode(str((data or {})["client.crt"]))
        pem = base64.b64decode(str((data or {})["client.key"]))
    except (KeyError, ValueError):
        raise Unreachable(f"Secret {namespace}/{ADMIN_CERT_SECRET} lacks client.crt or client.key; pass "
                          "--client-cert and --client-key", "config") from None
    return files.write("client.crt", crt), files.write("client.key", pem), f"Secret {namespace}/{ADMIN_CERT_SECRET}"


def _check_validity(cert_file: str, origin: str) -> None:
    """An expired (or not yet valid) client certificate fails the handshake with no date: name it here.
    (cryptography is imported here, not at start-up: only a resolved rlark-server needs it.)"""
    from cryptography import x509
    try:
        certificate = x509.load_pem_x509_certificate(Path(cert_file).read_bytes())
    except (OSError, ValueError):
        raise Unreachable(f"client certificate from {origin} is not a PEM certificate", "config") from None
    now = datetime.now(timezone.utc)
    if certificate.not_valid_after_utc < now:
        raise Unreachable(f"the client certificate for rlark-server (from {origin}) expired on "
                          f"{certificate.not_valid_after_utc:%Y-%m-%d %H:%M} UTC; get a new one", "config")
    if certificate.not_valid_before_utc > now:
        raise Unreachable(f"the client certificate for rlark-server (from {origin}) is not valid before "
                          f"{certificate.not_valid_before_utc:%Y-%m-%d %H:%M} UTC", "config")


def _with_scheme(address: str) -> str:
    return address if address.startswith(("https://", "http://")) else f"https://{address}"


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True
