"""rlark-server: where it is and how rlark reaches it (flags and config keys, kubeconfig extension, discovery).

Owns resolving its address, client certificate and CA in that order (as the platform CLI rlarkctl finds them) into
one TLS context (cluster/tls.py: the admin key from Secret `rlark-admin-cert` is loaded from memory and never
written to disk), and the kubernetes ApiClients that speak mutual TLS to it with that context.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import ssl
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from rlark_tui.cluster import tls
from rlark_tui.cluster.errors import ApiError, NotFound, Request, Unreachable
from rlark_tui.errors import UsageError
from rlark_tui.local.config import SERVER_KEYS, RlarkConfig
from rlark_tui.model.objects import dig
from rlark_tui.model.timefmt import parse_time

if TYPE_CHECKING:
    import argparse

    from kubernetes import client as k8s

    from rlark_tui.cluster.http import Http

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
    pems: dict[str, bytes] = field(default_factory=dict, repr=False)
    """The files flags name, read (capped) when the flags are: a missing or non-PEM file is a usage error (exit 2)
    before anything connects. Files a config file names are read when rlark-server is first needed."""

    @classmethod
    def from_sources(cls, args: argparse.Namespace | None, config: RlarkConfig) -> ServerOptions:
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
        pems = {key: tls.read_pem(str(values[key]), f"{_FILES[key]} (--{key})") for key in _FILES
                if origins.get(key) == f"--{key}"}
        return cls(values, origins, pems)

    def pem(self, key: str) -> bytes:
        """The bytes of file option `key` (read now when a config file named it; Unreachable when unusable)."""
        if key in self.pems:
            return self.pems[key]
        try:
            return tls.read_pem(str(self.values[key]), f"{_FILES[key]} ({key} from {self.origins[key]})")
        except tls.TLSError as exc:
            raise Unreachable(str(exc), "config") from None

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


_FILES = MappingProxyType({"client-cert": "client certificate", "client-key": "client key", "ca-cert": "CA certificate"})


@dataclass(frozen=True)
class ServerEndpoint:
    """A resolved rlark-server: URL, its TLS context (client certificate, CA or none), and where each came from
    (for `rlark config`)."""

    url: str
    context: ssl.SSLContext = field(repr=False)
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


def resolve(options: ServerOptions, extension: dict[str, Any] | None, control: Http | None, namespace: str) -> ServerEndpoint:
    """rlark-server in the issue's order: flags and config keys, then the kubeconfig extension, then discovery
    through the control plane `control` (an Http, or None in server-only mode): Secret `rlark-admin-cert` in
    `namespace` for the certificate, a live Lease `rlark-server-peer-*` for the address. Raises Unreachable
    (kind "config") with one line saying what to pass."""
    extension = extension if isinstance(extension, dict) else {}
    url, url_origin, lease_ip = _address(options, extension, control, namespace)
    cert, key, cert_origin = _certificate(options, control, namespace)
    ca, ca_origin = None, options.origins.get("ca-cert", "")
    if options.get("ca-cert"):
        ca = options.pem("ca-cert")
    elif extension.get("certificate-authority-data"):
        try:
            ca = base64.b64decode(str(extension["certificate-authority-data"]), validate=True)
        except (ValueError, binascii.Error):
            raise Unreachable("the kubeconfig's rlark.io/server extension has a certificate-authority-data that "
                              "is not base64", "config") from None
        ca_origin = "kubeconfig extension"
    if ca is None and not options.insecure:
        raise Unreachable(NO_CA.format(url=url), "config")
    _check_validity(cert, cert_origin)
    try:
        context = tls.client_context(None if options.insecure else ca, cert, key, verify=not options.insecure,
                                     what=f"the client certificate from {cert_origin}")
    except tls.TLSError as exc:
        raise Unreachable(str(exc), "config") from None
    return ServerEndpoint(url, context, options.insecure, options.get("server-hostname"), url_origin,
                          cert_origin, ca_origin or "(none)", lease_ip)


def api_client(endpoint: ServerEndpoint, host: str) -> k8s.ApiClient:
    """A kubernetes ApiClient for `host` (a URL under the server) with the endpoint's TLS context; no retries."""
    import urllib3
    from kubernetes import client as k8s

    configuration = k8s.Configuration()
    configuration.host = host
    if endpoint.hostname:
        configuration.tls_server_name = endpoint.hostname
    if endpoint.insecure:
        urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
    configuration.retries = urllib3.Retry(total=0, connect=0, read=0, redirect=0, status=0, raise_on_status=False)
    return tls.api_client(configuration, endpoint.context)


def agent_id(cluster_namespace: str) -> str:
    """The agent ID rlark-server routes by: the cluster namespace without `rlark-` (`rlark-gpu-a` -> `gpu-a`)."""
    return cluster_namespace.removeprefix("rlark-")


def live_lease_ips(leases: list[dict[str, Any]], now: datetime) -> list[str]:
    """The IPs of live `rlark-server-peer-*` Leases (holderIdentity `<ip>/<peer>/<token>`; only the IP is kept)."""
    found = []
    for lease in leases:
        if not str(dig(lease, "metadata", "name", default="")).startswith(LEASE_PREFIX):
            continue
        holder, duration, renewed = (dig(lease, "spec", field) for field in
                                     ("holderIdentity", "leaseDurationSeconds", "renewTime"))
        if not isinstance(holder, str) or not isinstance(duration, int) or not isinstance(renewed, str):
            continue
        renew = parse_time(renewed)  # the one reader of API times: one without a zone raised TypeError here
        if renew is None or (now - renew).total_seconds() > duration:
            continue
        ip = holder.partition("/")[0]
        if _is_ip(ip):
            found.append(ip)
    return found


def _address(options: ServerOptions, extension: dict[str, Any], control: Http | None, namespace: str) -> tuple[str, str, str]:
    given = options.get("server-address")
    address = _with_scheme(given) if given else None
    parts = urlsplit(address) if address else None
    if address and parts is not None and parts.hostname:
        return address.rstrip("/"), options.origins["server-address"], ""
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
    items = dig(body, "items")
    ips = live_lease_ips([i for i in items if isinstance(i, dict)] if isinstance(items, list) else [],
                         datetime.now(UTC))
    if not ips:
        raise Unreachable(f"no rlark-server address: no live Lease {LEASE_PREFIX}* in namespace {namespace}; "
                          "pass --server-address", "config")
    ip = ips[0]
    host = f"[{ip}]" if ":" in ip else ip
    return f"https://{host}:{port}", f"Lease {LEASE_PREFIX}* in {namespace} (IP {ip})", ip


def _certificate(options: ServerOptions, control: Http | None, namespace: str) -> tuple[bytes, bytes, str]:
    cert, key = options.get("client-cert"), options.get("client-key")
    if cert and key:
        return options.pem("client-cert"), options.pem("client-key"), options.origins["client-cert"]
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
    crt_data, key_data = dig(secret, "data", "client.crt"), dig(secret, "data", "client.key")
    lacks = Unreachable(f"Secret {namespace}/{ADMIN_CERT_SECRET} lacks client.crt or client.key; pass "
                        "--client-cert and --client-key", "config")
    if not isinstance(crt_data, str) or not isinstance(key_data, str):
        raise lacks
    try:
        crt = base64.b64decode(crt_data, validate=True)
        pem = base64.b64decode(key_data, validate=True)
    except (ValueError, binascii.Error):
        raise lacks from None
    return crt, pem, f"Secret {namespace}/{ADMIN_CERT_SECRET}"


def _check_validity(cert: bytes, origin: str) -> None:
    """An expired (or not yet valid) client certificate fails the handshake with no date: name it here.
    (cryptography is imported here, not at start-up: only a resolved rlark-server needs it.)"""
    from cryptography import x509
    try:
        certificate = x509.load_pem_x509_certificate(cert)
    except (ValueError, TypeError):
        raise Unreachable(f"client certificate from {origin} is not a PEM certificate", "config") from None
    now = datetime.now(UTC)
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
