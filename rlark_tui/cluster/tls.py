"""TLS for every endpoint rlark talks to: one `ssl.SSLContext` per endpoint, built from CA, certificate and key
*bytes*, shared by every request to it (urllib3 pools, the `kubernetes` ApiClient's pool, the exec WebSocket,
tunnels).

Key material never rests on disk: Python's `ssl` reads a certificate chain only from a path, so the certificate
and key go into an anonymous in-memory file (memfd, read through /proc/self/fd) that is closed as soon as
`load_cert_chain` returns; where memfd is missing, into a 0600 file in a 0700 directory unlinked right after.
Nothing is left for SIGTERM, SIGHUP or SIGKILL to leave behind, and no request can lose a file another is using.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import ssl
import tempfile
import threading
import warnings
from typing import TYPE_CHECKING, Any

from rlark_tui.errors import UsageError
from rlark_tui.local.fsutil import read_input

if TYPE_CHECKING:  # imported where used: the lean path of `rlark get` (cluster/lean.py) loads neither
    import urllib3
    from kubernetes import client as k8s

MAX_PEM_BYTES = 1 << 20
"""A CA bundle, certificate or key file larger than this is refused (a real one is a few KiB)."""


class TLSError(UsageError):
    """Certificate material rlark cannot use; the message is one line naming what is wrong."""


class ClientContext(ssl.SSLContext):
    """A client context made by `client_context`: it knows the CA it verifies servers with, and makes its
    server-only twin once (`server_only`)."""

    ca: bytes | None = None
    verify: bool = True
    with_cert: bool = False
    _twin: ClientContext | None = None
    _twin_lock: threading.Lock


def client_context(ca: bytes | None, cert: bytes | None = None, key: bytes | None = None,
                   verify: bool = True, what: str = "the client certificate") -> ClientContext:
    """The context for this material: `ca` (PEM, None = the system CAs) verifies the server unless `verify` is
    False; `cert` and `key` (PEM) are the client's. Its owner (an ApiClient's pool, an Http) shares it by every
    request to its endpoint. Raises TLSError with one line."""
    context = ClientContext(ssl.PROTOCOL_TLS_CLIENT)  # certificate and host name verified, as by default
    if verify:
        if ca is not None:
            context.load_verify_locations(cadata=_pem_text(ca, "CERTIFICATE", "the CA certificate"))
        else:
            context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    else:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if cert is not None or key is not None:
        if cert is None or key is None:
            raise TLSError(f"{what} needs both a certificate and its key")
        _load_chain(context, _pem_text(cert, "CERTIFICATE", what).encode(),
                    _pem_text(key, "PRIVATE KEY", f"the key of {what}").encode(), what)
    context.ca, context.verify, context.with_cert = ca, bool(verify), cert is not None
    context._twin_lock = threading.Lock()
    return context


@functools.cache
def public_context() -> ssl.SSLContext:
    """The one context of endpoints outside the cluster (a webhook receiver, an object store's presigned URL):
    the system's CAs, verified; made once, shared by every such request (it holds no key)."""
    return ssl.create_default_context()


def server_only(context: ssl.SSLContext) -> ssl.SSLContext:
    """The context that verifies servers as `context` does, without its client certificate (for another origin,
    which must not be sent the key's proof); made once per context."""
    if not isinstance(context, ClientContext):
        return client_context(None, verify=context.verify_mode != ssl.CERT_NONE)
    if not context.with_cert:
        return context
    with context._twin_lock:
        if context._twin is None:
            context._twin = client_context(context.ca, verify=context.verify)
        return context._twin


def read_pem(path: str, what: str) -> bytes:
    """A PEM file's bytes, read with a cap; one line (exit 2) when it is missing, empty, too large or not PEM.
    `what` names it, e.g. `client key (--client-key)`."""
    try:
        data = read_input(path, what, MAX_PEM_BYTES)
    except UsageError as exc:
        raise TLSError(str(exc)) from None
    if not data.strip():
        raise TLSError(f"{what} {path}: the file is empty (a PEM file starts with -----BEGIN)")
    try:
        data.decode("ascii")
    except UnicodeDecodeError:
        raise TLSError(f"{what} {path}: binary data, not a PEM file (convert DER with `openssl x509 -inform der` "
                       "or `openssl pkey -inform der`)") from None
    if b"-----BEGIN " not in data:
        raise TLSError(f"{what} {path}: not a PEM file (no -----BEGIN line)")
    return data


def pool_manager(context: ssl.SSLContext, proxy: str | None = None, proxy_headers: dict[str, Any] | None = None,
                 **pool_args: Any) -> urllib3.PoolManager:
    """A urllib3 pool that uses `context` (and no certificate files) for every HTTPS connection; through `proxy`
    (a kubeconfig's `proxy-url`: HTTP CONNECT, or SOCKS as the `kubernetes` client supports it) when given."""
    import urllib3

    verify = context.verify_mode != ssl.CERT_NONE
    pool_args.update(ssl_context=context, cert_reqs=ssl.CERT_REQUIRED if verify else ssl.CERT_NONE)
    if proxy and proxy.lower().startswith("socks"):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # urllib3's DependencyWarning: the line below says it
                from urllib3.contrib.socks import SOCKSProxyManager
        except ImportError:
            raise UsageError(f"proxy-url {proxy}: a SOCKS proxy needs the PySocks package "
                             "(pip install pysocks)") from None
        return SOCKSProxyManager(proxy, headers=proxy_headers, **pool_args)
    from rlark_tui.cluster import pools
    if proxy:
        try:
            return pools.head_bound(urllib3.ProxyManager(proxy, proxy_headers=proxy_headers, **pool_args))
        except (urllib3.exceptions.ProxySchemeUnknown, urllib3.exceptions.LocationParseError, ValueError):
            raise UsageError(f"proxy-url {proxy}: not a proxy URL rlark can use (http://, https:// or "
                             "socks5://HOST:PORT)") from None
    return pools.head_bound(urllib3.PoolManager(**pool_args))


def api_client(configuration: k8s.Configuration, context: ssl.SSLContext) -> k8s.ApiClient:
    """A kubernetes ApiClient whose pool uses `context`; the configuration names no certificate files, and
    `context_of(configuration)` finds the context again (for the exec WebSocket, a tunnel, a copy)."""
    from kubernetes import client as k8s

    configuration.ssl_ca_cert = configuration.cert_file = configuration.key_file = None
    configuration.verify_ssl = context.verify_mode != ssl.CERT_NONE
    proxy, configuration.proxy = configuration.proxy, None  # the client's own pool is replaced at once by ours
    try:
        client = k8s.ApiClient(configuration)
    finally:
        configuration.proxy = proxy
    return _pooled(client, context)


def _pooled(api_client: k8s.ApiClient, context: ssl.SSLContext) -> k8s.ApiClient:
    """`api_client` with its pool rebuilt around `context` (`context_of` finds it there again)."""
    configuration = api_client.configuration
    pool_args: dict[str, Any] = {}
    if configuration.retries is not None:
        pool_args["retries"] = configuration.retries
    if configuration.tls_server_name:
        pool_args["server_hostname"] = configuration.tls_server_name
    if configuration.connection_pool_maxsize is not None:
        pool_args["maxsize"] = configuration.connection_pool_maxsize
    if configuration.socket_options is not None:
        pool_args["socket_options"] = configuration.socket_options
    proxy = None
    if configuration.proxy:
        from kubernetes.client.rest import should_bypass_proxies
        if not should_bypass_proxies(configuration.host, configuration.no_proxy or ""):
            proxy = configuration.proxy
    api_client.rest_client.pool_manager = pool_manager(context, proxy, configuration.proxy_headers, **pool_args)
    return api_client


def context_of(api_client: k8s.ApiClient | None) -> ClientContext | None:
    """The context an ApiClient made by `api_client` connects with (its pool's), if any."""
    pool = getattr(getattr(api_client, "rest_client", None), "pool_manager", None)
    context = getattr(pool, "connection_pool_kw", {}).get("ssl_context")
    return context if isinstance(context, ClientContext) else None


def websocket_sslopt(api_client: k8s.ApiClient) -> dict[str, Any] | None:
    """websocket-client's `sslopt` for this client's context (None: it has none)."""
    context = context_of(api_client)
    if context is None:
        return None
    options: dict[str, Any] = {"context": context}
    if api_client.configuration.tls_server_name:
        options["server_hostname"] = api_client.configuration.tls_server_name
    return options


def _pem_text(data: bytes, kind: str, what: str) -> str:
    if len(data) > MAX_PEM_BYTES:
        raise TLSError(f"{what} is larger than {MAX_PEM_BYTES >> 20} MiB, not PEM")
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise TLSError(f"{what} is not PEM text (binary data; DER must be converted to PEM)") from None
    if "-----BEGIN " not in text or kind not in text:
        raise TLSError(f"{what} is not a PEM {kind.lower()} (no -----BEGIN ...{kind}----- line)")
    return text


def _load_chain(context: ssl.SSLContext, cert: bytes, key: bytes, what: str) -> None:
    """Load certificate and key through an anonymous in-memory file (else a file unlinked at once)."""
    try:
        if hasattr(os, "memfd_create"):
            fd = os.memfd_create("rlark-tls", os.MFD_CLOEXEC)
            try:
                view = memoryview(cert + b"\n" + key + b"\n")
                while view:
                    view = view[os.write(fd, view):]
                context.load_cert_chain(f"/proc/self/fd/{fd}")
            finally:
                os.close(fd)
            return
        directory = tempfile.mkdtemp(prefix="rlark-tls-")
        try:
            path = os.path.join(directory, "chain.pem")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(cert + b"\n" + key + b"\n")
            try:
                context.load_cert_chain(path)
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(path)
        finally:
            shutil.rmtree(directory, ignore_errors=True)
    except ssl.SSLError as exc:
        reason = "its key does not match the certificate" if "KEY_VALUES_MISMATCH" in str(exc) else \
            f"not a usable certificate and key ({exc.reason or exc})"
        raise TLSError(f"{what}: {reason}") from None
