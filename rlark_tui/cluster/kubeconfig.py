"""Finding and loading kubeconfig contexts the way kubectl does (--kubeconfig, $KUBECONFIG, ~/.kube/config, in-cluster).

Owns the kubernetes client configuration per context and the RLark hints a kubeconfig can carry in `extensions`.
Plain contexts (token, token file, basic auth, client certificate; files or inline data) are resolved here without
importing `kubernetes` (a PlainContext: what the lean client path, cluster/lean.py, connects with) and turned into a
client Configuration field for field what the `kubernetes` loader sets, its TLS material as the PlainContext holds
it (tests/cluster/test_kubeconfig_fast.py compares them); exec plugins, auth providers, in-cluster and anything
irregular go through the `kubernetes` loader itself, imported only then (it pulls in google-auth,
requests-oauthlib and pydantic: bench/startup.py measures what that costs), with the TLS material taken out of what it reads. Either
way the client gets one TLS context built from bytes (cluster/tls.py), a `proxy-url` too: no key goes to disk.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, overload
from urllib.parse import urlsplit

import yaml

from rlark_tui.errors import UsageError
from rlark_tui.local.fsutil import file_problem, read_input, read_settings
from rlark_tui.text.parse import load_yaml

if TYPE_CHECKING:
    import logging

    from kubernetes import client as k8s
    from kubernetes.config.kube_config import ConfigNode

IN_CLUSTER = "in-cluster"
_SEPARATOR = ";" if os.name == "nt" else ":"
SERVER_EXTENSION = "rlark.io/server"
WRONG_TYPE = "not a kubeconfig (a section or entry has the wrong type)"
UNSENDABLE_TOKEN = "its token holds a character other than printable ASCII, which no request header carries"
"""Why a token is not used: a line break or control character in it (a tokenFile written by `echo`, a block
scalar, another tool's output) ended rlark in a crash report at the first request, and a wide character too."""


def sendable(token: str) -> bool:
    """Whether a header can carry `token` as it is: printable ASCII only."""
    return token.isascii() and token.isprintable()


def _file_token(path: str) -> str:
    """A tokenFile's token, without the whitespace around it, as kubectl reads one (`echo "$T" > token` ends it
    in a newline)."""
    return read_input(path, "kubeconfig credential", MAX_CREDENTIAL_BYTES).decode().strip()


@dataclass(frozen=True)
class Kubeconfig:
    """The merged kubeconfig: where it came from, its contexts and the RLark hints in its extensions."""

    paths: tuple[Path, ...]
    contexts: dict[str, dict[str, Any]]
    current_context: str | None
    gateway: str | None = None
    merged: dict[str, Any] = field(default_factory=dict[str, Any], repr=False)
    """The merged document, as the `kubernetes` loader merges the files (first entry of a name wins)."""
    origins: dict[tuple[str, str], str] = field(default_factory=dict, repr=False)
    """(section, entry name) -> the file that entry came from (relative paths in it are relative to that file)."""
    servers: dict[str, dict[str, Any]] = field(default_factory=dict[str, Any])
    """Kubeconfig cluster name -> its `rlark.io/server` extension (`server`, `certificate-authority-data`)."""
    gateways: dict[str, str] = field(default_factory=dict[str, str])
    """Context name -> the gateway its own rlark extension names (several control planes: each its own)."""
    unusable: dict[str, str] = field(default_factory=dict[str, str])
    """Context name -> which of its names holds a control character or line break (_unprintable): such a
    context is not in `contexts`, and naming it is one line (resolve_context)."""
    documents: tuple[tuple[str, Any], ...] = field(default=(), repr=False)
    """Each file as rlark read it (within bounds): what the `kubernetes` loader is given, never a second read."""

    def gateway_of(self, context: str) -> str | None:
        """The gateway of `context`: its own extension's, else the one found anywhere in the files."""
        return self.gateways.get(context) or self.gateway

    def read_only(self, context: str) -> bool:
        """Whether the context's own RLark extension (`rlark.io/console`) says `readonly: true`: each context keeps
        its own setting (a production control plane read-only beside a writable one), as it keeps its credentials.
        Only `false` (or no setting) is writable: a value that is no boolean (the string "true" of a JSON kubeconfig
        or another tool) keeps the context read-only, never writable."""
        extensions = (self.contexts.get(context) or {}).get("extensions")
        for entry in extensions if isinstance(extensions, list) else []:
            extension = entry.get("extension") if isinstance(entry, dict) else None
            if isinstance(extension, dict) and "rlark" in str(entry.get("name", "")).lower() \
                    and extension.get("readonly", False) is not False:
                return True
        return False

    def server_extension(self, context: str) -> dict[str, Any] | None:
        """The rlark-server extension of the cluster entry a context uses, if it carries one."""
        return self.servers.get(str(self.contexts.get(context, {}).get("cluster") or ""))

    @property
    def in_cluster(self) -> bool:
        return not self.paths


def kubeconfig_paths(flag: str | None) -> list[Path]:
    """--kubeconfig wins, then $KUBECONFIG (a path list), then ~/.kube/config; only files that exist count (a FIFO
    or a device too, read within the bound of _read: `--kubeconfig <(...)`)."""
    if flag:
        path = Path(flag).expanduser()
        if not path.exists():
            raise UsageError(f"kubeconfig {flag}: no such file")
        return [path]
    env = os.environ.get("KUBECONFIG")
    if env:
        return [Path(p).expanduser() for p in env.split(_SEPARATOR) if p and Path(p).expanduser().exists()]
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
        documents = [(str(path), _read(path)) for path in paths]
        merged, origins = merge(documents)
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
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
        entries = {section: _first_of_names(merged, section, key) for section, key in (("clusters", "cluster"),
                                                                                        ("users", "user"))}
        unusable = {name: why for name, context in contexts.items() if (why := _unprintable(entries, name, context))}
        contexts = {name: context for name, context in contexts.items() if name not in unusable}
        gateway = _gateway_extension(merged, contexts)
        gateways = {name: found for name, ctx in contexts.items()
                    if (found := _gateway_extension({}, {name: ctx})) is not None}
        servers = _server_extensions(merged)
    except (TypeError, AttributeError):
        raise UsageError(f"kubeconfig {paths[0]}: {WRONG_TYPE}") from None
    return Kubeconfig(
        paths=tuple(paths),
        contexts=contexts,
        current_context=_first_current_context(documents) or merged.get("current-context") or None,
        gateway=gateway,
        merged=merged,
        origins=origins,
        servers=servers,
        gateways=gateways,
        unusable=unusable,
        documents=tuple(documents),
    )


def _unprintable(entries: dict[str, dict[str, dict[str, Any]]], name: str, context: dict[str, Any]) -> str:
    """Which name of a context (its own, its cluster's, user's or namespace, the cluster's server, proxy or TLS
    name and its rlark-server extension's server, the user's exec command or arguments) holds a control character or
    line break; "" when none. Another user's kubeconfig could otherwise forge lines, or send a terminal sequence,
    wherever rlark names them (`rlark config`, `version`, the CONTEXT column, the TUI's header, every error naming
    the server)."""
    cluster = entries["clusters"].get(str(context.get("cluster")), {})
    user = entries["users"].get(str(context.get("user")), {})
    execs: dict[str, Any] = found if isinstance(found := user.get("exec"), dict) else {}
    args: list[Any] = given if isinstance(given := execs.get("args"), list) else []
    fields = {"its name": name, "its cluster": context.get("cluster"), "its user": context.get("user"),
              "its namespace": context.get("namespace"), "its server": cluster.get("server"),
              "its proxy-url": cluster.get("proxy-url"), "its tls-server-name": cluster.get("tls-server-name"),
              "its exec command": execs.get("command")}
    extensions: list[Any] = given if isinstance(given := cluster.get("extensions"), list) else []
    servers = [ext.get("extension") for ext in extensions if isinstance(ext, dict) and ext.get("name") == SERVER_EXTENSION]
    named = [*fields.items(), *(("its exec arguments", arg) for arg in args),
             *(("its rlark-server extension's server", found.get("server")) for found in servers
               if isinstance(found, dict))]
    return next((what for what, value in named if isinstance(value, str) and not value.isprintable()), "")


def _first_of_names(merged: dict[str, Any], section: str, key: str) -> dict[str, dict[str, Any]]:
    """Entry name -> its `key` mapping, the first entry of a name (as merge keeps it); one pass over `section`."""
    found: dict[str, dict[str, Any]] = {}
    entries = merged.get(section)
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("name"), str) and entry["name"] not in found:
            value = entry.get(key)
            found[entry["name"]] = value if isinstance(value, dict) else {}
    return found


def resolve_context(kubeconfig: Kubeconfig, context: str | None) -> str:
    """The context to use: the flag, else current-context; an unknown name is a usage error."""
    name = context or kubeconfig.current_context
    if not name:
        raise UsageError(f"kubeconfig {kubeconfig.paths[0]} has no current-context: pass --context "
                         f"(contexts: {', '.join(sorted(kubeconfig.contexts)) or 'none'})")
    if name in kubeconfig.unusable:
        raise UsageError(f"context {name!r} of the kubeconfig is not used: {kubeconfig.unusable[name]} holds a "
                         "control character or line break")
    if name not in kubeconfig.contexts:
        raise UsageError(f"context {name!r} is not in the kubeconfig "
                         f"(contexts: {', '.join(sorted(kubeconfig.contexts)) or 'none'})")
    return name


RECORD_CHARS = 500
"""A record the kubernetes client logs is cut here (it quotes the plugin's answer and stderr: up to 1 MiB)."""


class _RedactedRecords:
    """The kubernetes client logs exec-plugin failures, with the plugin's stderr or answer (its apiVersion, its
    expirationTimestamp), on the root logger, which prints them on stderr: redact them, on one line (sinks.one_line:
    a line break or a terminal sequence there forged lines of rlark's own) of at most RECORD_CHARS. (A logging
    filter: an object with `filter(record)`; `logging` loads only with the client, in api_client.)"""

    def filter(self, record: logging.LogRecord) -> bool:
        from rlark_tui.text.redact import redact_text
        from rlark_tui.text.sinks import one_line

        text = one_line(redact_text(record.getMessage()))
        record.msg, record.args = text if len(text) <= RECORD_CHARS else text[:RECORD_CHARS - 1] + "…", ()
        return True


_REDACTED_RECORDS = _RedactedRecords()


def api_client(kubeconfig: Kubeconfig, context: str) -> k8s.ApiClient:
    """A kubernetes ApiClient for one context; no urllib3 retries (errors surface at once, callers back off)."""
    import logging

    import urllib3

    if _REDACTED_RECORDS not in logging.getLogger().filters:
        logging.getLogger().addFilter(_REDACTED_RECORDS)
    retries = urllib3.Retry(total=0, connect=0, read=0, redirect=0, status=0, raise_on_status=False)
    # Over https, one TLS context from the credentials' bytes (cluster/tls.py), a `proxy-url` or an exec plugin
    # too: inline client keys never go to disk.
    from rlark_tui.cluster import pools, tls
    from rlark_tui.cluster.lean import tls_context
    plain = plain_context(kubeconfig, context)
    if plain is not None:
        https = (plain.host or "").startswith("https")
        configuration = _configuration(plain)
        configuration.retries = retries
        return tls.api_client(configuration, tls_context(plain)) if https else pools.plain_client(configuration)
    configuration, taken = _loader_configuration(kubeconfig, context)
    configuration.retries = retries
    if not (configuration.host or "").startswith("https"):
        return pools.plain_client(configuration)
    return tls.api_client(configuration, tls_context(_loader_tls(configuration, taken)))


def _check_skip_verify(cluster: object, context: str) -> None:
    """A cluster's `insecure-skip-tls-verify` must be true or false: the kubernetes loader takes `not value`, so the
    string "false" (which kubectl refuses) would turn the server's certificate check off."""
    if isinstance(cluster, dict) and not isinstance(cluster.get("insecure-skip-tls-verify", False), bool):
        raise UsageError(f"context {context}: unusable kubeconfig entry (its insecure-skip-tls-verify is not true "
                         "or false)")


def _loader_configuration(kubeconfig: Kubeconfig, context: str) -> tuple[k8s.Configuration, dict[str, Credential]]:
    """The `kubernetes` loader's Configuration: in-cluster, exec plugins, auth providers, irregular entries. The
    CA, client certificate and key of the context's entries are taken out of what the loader reads (it would copy
    inline data to temporary files, left behind by a SIGKILL) and returned as Credentials by kind (`ca`, `cert`,
    `key`), for one TLS context."""
    from kubernetes import client as k8s
    from kubernetes.config import ConfigException
    from kubernetes.config.incluster_config import load_incluster_config
    from kubernetes.config.kube_config import KubeConfigLoader

    from rlark_tui.cluster import execplugin
    execplugin.bound()
    configuration = k8s.Configuration()
    taken: dict[str, Credential] = {}
    try:
        if kubeconfig.in_cluster:
            load_incluster_config(client_configuration=configuration)
        else:
            _exec_trusted(kubeconfig, context)
            problem = _auth_provider_problem(_user_of(kubeconfig, context))
            if problem:
                raise ConfigException(problem)
            named = _entry(kubeconfig.merged, "clusters", str(kubeconfig.contexts[context].get("cluster")),
                           required=False)
            _check_skip_verify(named.get("cluster") if named is not None else None, context)
            merged = _merged_as_read(kubeconfig.documents)
            if merged is None:
                raise ConfigException("Invalid kube-config file. No configuration found.")
            taken = _take_tls_material(merged, context)
            KubeConfigLoader(config_dict=merged, config_base_path=None,
                             active_context=context).load_and_set(configuration)
            cluster = named.get("cluster") if named is not None else None
            configuration.host = _named_server(cluster, bool(taken.get("ca") or taken.get("cert")) or isinstance(
                cluster, dict) and cluster.get("insecure-skip-tls-verify") is True, context)
        if not all(sendable(value) for value in configuration.api_key.values() if isinstance(value, str)):
            raise ConfigException(UNSENDABLE_TOKEN)
    except (ConfigException, OSError, ValueError, yaml.YAMLError) as exc:
        raise UsageError(f"context {context}: unusable kubeconfig entry ({_first_line(exc)})") from None
    except (TypeError, AttributeError, KeyError):
        raise UsageError(f"context {context}: unusable kubeconfig entry ({WRONG_TYPE})") from None
    return configuration, taken


_WITH_SCHEME = re.compile(r"\A[A-Za-z][A-Za-z0-9+.-]*://[^/?#]")
"""A URL with a scheme and a host (`https://h`): what client-go takes as it is."""


def server_url(server: str, tls: bool, context: str) -> str:
    """A cluster's `server` as kubectl reads it (client-go's DefaultServerURL): a URL with a scheme and a host as it
    is; anything else is a host or host:port, put after `https://` when the context names a CA, a client
    certificate or insecure-skip-tls-verify (`tls`), else after `http://`. A schemeless server with a path, or
    none at all, is a UsageError, one line: urllib3 took `example.com` or `0` as it was, warning that a URL
    without a scheme is deprecated, and looked the name up as it could."""
    if _WITH_SCHEME.match(server):
        return server
    url = f"{'https' if tls else 'http'}://{server}"
    with contextlib.suppress(ValueError):
        parts = urlsplit(url)
        _ = parts.port  # a port that is no number from 0 to 65535: ValueError
        if server and parts.hostname and parts.path in ("", "/"):
            return url
    raise UsageError(f"context {context}: unusable kubeconfig entry (its server {server!r} is not a URL or a "
                     "host:port pair)")


def _named_server(cluster: object, tls: bool, context: str) -> str:
    """server_url of the cluster entry's server; none is one line, as kubectl says 'no server found for cluster'
    (the client's default host was '', which urllib3 took as a URL without a scheme)."""
    if not isinstance(cluster, dict) or "server" not in cluster:
        raise UsageError(f"context {context}: unusable kubeconfig entry (its cluster names no server)")
    return server_url(cluster["server"], tls, context)


def _merged_as_read(documents: tuple[tuple[str, Any], ...]) -> Any:
    """The kubeconfig the loader is given (KubeConfigLoader's config_dict), merged as its KubeConfigMerger merges
    files (the first entry of each name wins, the last current-context), over the documents rlark read: ConfigNodes
    of the loader's public class, naming each entry's file (for paths relative to it). The merger opened and parsed
    the files again, without a bound, so a file swapped in after rlark judged it (a context without a command then
    with an exec plugin) was the one used. None when there is no document."""
    from kubernetes.config import ConfigException
    from kubernetes.config.kube_config import ConfigNode

    merged: Any = None
    for path, document in documents:
        if document is None:
            raise ConfigException(f"Invalid kube-config. {path} file is empty")
        config = copy.deepcopy(document)
        if merged is None:
            merged = ConfigNode(path, {**config, "clusters": [], "contexts": [], "users": []}, path)
        for item in ("clusters", "contexts", "users"):
            for entry in config.get(item, []) or []:
                if not any(exists["name"] == entry["name"] for exists in merged.value[item]):
                    merged.value[item].append(ConfigNode(f"{path}/{entry}", entry, path))
        if "current-context" in config:
            merged.value["current-context"] = config["current-context"]
    return merged


def _user_of(kubeconfig: Kubeconfig, context: str) -> tuple[str, dict[str, Any]]:
    """The name and the user mapping of the context's user (("", {}) when it names none)."""
    user_name = _first_of_names(kubeconfig.merged, "contexts", "context").get(context, {}).get("user")
    if not isinstance(user_name, str):
        return "", {}
    return user_name, _first_of_names(kubeconfig.merged, "users", "user").get(user_name, {})


def _exec_trusted(kubeconfig: Kubeconfig, context: str) -> None:
    """UsageError when the context's user runs a command (an exec plugin or an auth provider) and the kubeconfig
    file that names it is one another user could have written (fsutil.read_settings): that command would run as
    the operator, and its answer (a cloud token) go to the server that file names."""
    user_name, user = _user_of(kubeconfig, context)
    if user_name and any(key in user for key in _LOADER_ONLY):
        origin = kubeconfig.origins.get(("users", user_name))
        if origin:
            read_settings(origin, "kubeconfig", MAX_KUBECONFIG_BYTES, refused="its exec plugin is not run")


REMOVED_PROVIDERS = MappingProxyType({"gcp": "gke-gcloud-auth-plugin", "azure": "kubelogin"})
"""The auth providers kubectl removed in 1.26, and the exec plugin it names instead of each: the kubernetes loader
still runs a gcp provider's cmd-path (with no bound on its output or its time) or asks Google's default
credentials (the metadata server)."""
OIDC_EXPIRY_SKEW = 300
"""Seconds before its exp an oidc id-token is taken as expired, as the kubernetes loader takes it."""
_LAST_TIME = 253402300799
"""The last second of the year 9999, the last a Python datetime holds."""


def _auth_provider_problem(user_entry: tuple[str, dict[str, Any]]) -> str | None:
    """Why the context's auth provider is not used, else None. A removed one (gcp, azure) is refused as kubectl
    refuses it; an oidc id-token is read here within bounds (text.parse.load_json), as the loader would judge it,
    and one it would refresh (expired, or within OIDC_EXPIRY_SKEW of it) is refused: the loader's refresh sends the
    refresh token and the client secret to the issuer without verifying its certificate when no CA is named, and
    reads its answers without a bound."""
    provider = user_entry[1].get("auth-provider")
    if not isinstance(provider, dict):
        return None
    name = provider.get("name")
    if isinstance(name, str) and name in REMOVED_PROVIDERS:
        return (f"its {name} auth provider is not run: kubectl removed it in 1.26; use the exec plugin "
                f"{REMOVED_PROVIDERS[name]}")
    config = provider.get("config")
    token = config.get("id-token") if name == "oidc" and isinstance(config, dict) else None
    if not isinstance(token, str) or any(char in token for char in "=+/") or token.count(".") != 2:
        return None  # the loader sends no such token and asks for no other
    payload = token.split(".")[1]
    if len(payload) % 4 == 1:
        return None
    from rlark_tui.text.parse import load_json
    try:
        claims = load_json(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)), max_bytes=len(payload))
    except ValueError as exc:
        return f"its oidc id-token is not a JWT rlark reads ({_first_line(exc)})"
    expiry = claims.get("exp") if isinstance(claims, dict) else None
    if expiry is None:
        return None
    if not isinstance(expiry, (int, float)) or not 0 <= expiry <= _LAST_TIME:
        return "its oidc id-token's exp is not a time"
    import time
    if expiry - OIDC_EXPIRY_SKEW > time.time():
        return None
    from datetime import UTC, datetime
    at = datetime.fromtimestamp(int(expiry), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return (f"its oidc id-token {'expired' if expiry <= time.time() else 'expires'} at {at}: rlark does not refresh "
            "it (any kubectl command of this context does)")


def _take_tls_material(config: ConfigNode, context: str) -> dict[str, Credential]:
    """Remove the context's CA, client certificate and key from the loader's merged config (ConfigNodes over the
    documents' dicts) and return them with the loader's precedence: inline data, when present at all, wins over
    the file; a file is relative to the cluster entry's file, as the loader resolves it, and must exist. A
    `tokenFile` is read here within MAX_CREDENTIAL_BYTES and given to the loader as `token` (the loader reads a
    file whole: `tokenFile: /dev/zero` beside an exec plugin took rlark past 2.6 GB)."""
    from kubernetes.config import ConfigException

    node = config["contexts"].get_with_name(context)["context"]
    cluster = config["clusters"].get_with_name(node["cluster"])["cluster"]
    user = None
    if node.safe_get("user") and config.safe_get("users"):
        named = config["users"].get_with_name(node["user"], safe=True)
        user = named["user"] if named else None
    base = _base_path(cluster.path) if cluster.path else os.getcwd()
    taken: dict[str, Credential] = {}
    for entry, file_key, kind in ((cluster, "certificate-authority", "ca"), (user, "client-certificate", "cert"),
                                  (user, "client-key", "key")):
        values = getattr(entry, "value", None)
        if not isinstance(values, dict):
            continue
        data_key = f"{file_key}-data"
        if data_key in values:
            data = values.pop(data_key)
            values.pop(file_key, None)
            if data:
                taken[kind] = Credential(data=base64.standard_b64decode(data.encode()))
        elif file_key in values:
            path = os.path.normpath(os.path.join(base, values.pop(file_key)))
            problem = file_problem(path)
            if problem:
                raise ConfigException(f"its {file_key} {path}: {problem}")
            taken[kind] = Credential(path=path)
    values = getattr(user, "value", None)
    if isinstance(values, dict) and "tokenFile" in values and not values.get("token"):
        user_base = _base_path(user.path) if getattr(user, "path", None) else base  # type: ignore[union-attr]
        path = os.path.normpath(os.path.join(user_base, values.pop("tokenFile")))
        values["token"] = _file_token(path)
    return taken


def _loader_tls(configuration: k8s.Configuration, taken: dict[str, Credential]) -> PlainContext:
    """The TLS material of a loader configuration: what was taken out of the kubeconfig, else what the loader set
    (an in-cluster CA file; the certificate an exec plugin answered, which the loader copied to temporary files:
    read and removed at once)."""
    ca = taken.get("ca") or Credential(path=configuration.ssl_ca_cert or None)
    cert, key = taken.get("cert", Credential()), taken.get("key", Credential())
    if configuration.cert_file and configuration.key_file:
        from rlark_tui.cluster import tls
        try:
            cert = Credential(data=tls.read_pem(configuration.cert_file, "the exec plugin's client certificate"))
            key = Credential(data=tls.read_pem(configuration.key_file, "the exec plugin's client key"))
        finally:
            for path in (configuration.cert_file, configuration.key_file):
                with contextlib.suppress(OSError):
                    os.remove(path)
            configuration.cert_file = configuration.key_file = None
    return PlainContext(host=configuration.host, ca=ca, cert=cert, key=key, verify=bool(configuration.verify_ssl))


# -- the plain contexts, without the kubernetes loader ---------------------------------------------------------

_STRING_KEYS = MappingProxyType({
    "cluster": ("server", "certificate-authority", "certificate-authority-data", "tls-server-name", "proxy-url"),
    "user": ("token", "tokenFile", "username", "password", "client-certificate", "client-certificate-data",
             "client-key", "client-key-data"),
})
_LOADER_ONLY = ("exec", "auth-provider")
MAX_KUBECONFIG_BYTES = 16 * 2**20
"""The largest kubeconfig file read (one of many hundred contexts is a few hundred KiB)."""
MAX_CREDENTIAL_BYTES = 2**20
"""The largest credential file a kubeconfig names (tokenFile, a certificate or key file)."""
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _NotPlain(Exception):
    """This context needs the kubernetes loader (its own errors and messages included)."""


@dataclass(frozen=True)
class Credential:
    """A CA, client certificate or key: the user's file (`path`) or inline data (`data`, decoded), or neither."""

    path: str | None = None
    data: bytes | None = None


@dataclass(frozen=True)
class PlainContext:
    """A context that needs no exec plugin, auth provider or in-cluster config, resolved as the `kubernetes`
    loader resolves it: the server, the Authorization header, and the TLS material (read only for https)."""

    host: str
    """The server URL (server_url) without a trailing `/`."""
    authorization: str | None = None
    ca: Credential = Credential()
    cert: Credential = Credential()
    key: Credential = Credential()
    verify: bool = True
    tls_server_name: str | None = None
    proxy: str | None = None


def plain_context(kubeconfig: Kubeconfig, context: str) -> PlainContext | None:
    """`context` resolved without the `kubernetes` package, or None when it is not a plain one (exec plugin,
    auth provider, in-cluster, a missing file, a wrongly typed field, ...): then use the loader."""
    if kubeconfig.in_cluster:
        return None
    try:
        return _plain_context(kubeconfig, context)
    except (_NotPlain, OSError, UnicodeDecodeError, ValueError):
        return None


def plain_configuration(kubeconfig: Kubeconfig, context: str) -> k8s.Configuration | None:
    """The Configuration the `kubernetes` loader would build for `context`, but for the TLS material (which
    plain_context holds, for one TLS context), or None when the context is not a plain one: then use the loader."""
    plain = plain_context(kubeconfig, context)
    return _configuration(plain) if plain is not None else None


def _configuration(plain: PlainContext) -> k8s.Configuration:
    """The Configuration of a plain context, without TLS material: the caller gives the client a TLS context."""
    from kubernetes import client as k8s

    configuration = k8s.Configuration()
    if plain.authorization:
        configuration.api_key["BearerToken"] = plain.authorization
    configuration.host = plain.host
    configuration.verify_ssl = plain.verify
    if plain.tls_server_name is not None:
        configuration.tls_server_name = plain.tls_server_name
    if plain.proxy is not None:
        configuration.proxy = plain.proxy
    return configuration


def _plain_context(kubeconfig: Kubeconfig, context: str) -> PlainContext:
    merged = kubeconfig.merged
    entry = _entry(merged, "contexts", context)
    ctx = entry.get("context")
    if not isinstance(ctx, dict) or not isinstance(ctx.get("cluster"), str):
        raise _NotPlain
    user = None
    user_origin = ""
    if ctx.get("user") and merged.get("users"):
        named = _entry(merged, "users", ctx["user"], required=False)
        if named is not None:
            user, user_origin = named.get("user"), kubeconfig.origins[("users", ctx["user"])]
            if not isinstance(user, dict) or any(key in user for key in _LOADER_ONLY):
                raise _NotPlain
    cluster = _entry(merged, "clusters", ctx["cluster"]).get("cluster")
    cluster_origin = kubeconfig.origins[("clusters", ctx["cluster"])]
    if not isinstance(cluster, dict):
        raise _NotPlain
    for section, values in (("cluster", cluster), ("user", user or {})):
        if any(key in values and not isinstance(values[key], str) for key in _STRING_KEYS[section]):
            raise _NotPlain
    if "insecure-skip-tls-verify" in cluster and not isinstance(cluster["insecure-skip-tls-verify"], bool):
        raise _NotPlain  # the loader's path refuses it (_check_skip_verify)

    # The loader's order: a token (inline, else its file), else username and password.
    token = None
    if user:
        path, token = _FileOrData(user, "tokenFile", "token", _base_path(user_origin)).sources()
        token = _file_token(path) if not token and path else token
        if token and not sendable(token):
            raise UsageError(f"context {context}: unusable kubeconfig entry ({UNSENDABLE_TOKEN})")
        if not token and "username" in user and "password" in user:
            basic = f"{user['username']}:{user['password']}".encode("latin-1")
            token = f"Basic {base64.b64encode(basic).decode()}"
        elif token:
            token = f"Bearer {token}"
    ca, cert, key = Credential(), Credential(), Credential()
    named_tls = any(path or data for path, data in (
        _FileOrData(values, name, None, "").sources() for values, name in (
            (cluster, "certificate-authority"), (user, "client-certificate"))))
    host = _named_server(cluster, named_tls or cluster.get("insecure-skip-tls-verify") is True, context).rstrip("/")
    if host.startswith("https"):
        # The loader resolves the client certificate and key relative to the cluster's file, too.
        base = _base_path(cluster_origin)
        ca = _FileOrData(cluster, "certificate-authority", None, base).credential()
        cert = _FileOrData(user, "client-certificate", None, base).credential()
        key = _FileOrData(user, "client-key", None, base).credential()
    return PlainContext(
        host=host, authorization=token or None, ca=ca, cert=cert, key=key,
        verify=not cluster.get("insecure-skip-tls-verify", False),
        tls_server_name=cluster.get("tls-server-name"), proxy=cluster.get("proxy-url"))


@overload
def _entry(merged: dict[str, Any], section: str, name: str, required: Literal[True] = True) -> dict[str, Any]: ...
@overload
def _entry(merged: dict[str, Any], section: str, name: str, required: bool) -> dict[str, Any] | None: ...
def _entry(merged: dict[str, Any], section: str, name: str, required: bool = True) -> dict[str, Any] | None:
    entries = merged.get(section)
    if not isinstance(entries, list):
        raise _NotPlain
    found = [item for item in entries if isinstance(item, dict) and item.get("name") == name]
    if len(found) > 1 or (required and not found):
        raise _NotPlain
    return found[0] if found else None


def _base_path(origin: str) -> str:
    return os.path.abspath(os.path.dirname(origin))


@dataclass
class _FileOrData:
    """One credential given inline (`<key>-data`, or `token`) or as a file, with the loader's precedence: the
    inline key, when present at all, wins, even empty; a file path is joined to `base` (no `~` expansion)."""

    values: dict[str, Any] | None
    file_key: str
    data_key: str | None
    base: str

    def sources(self) -> tuple[str | None, str | None]:
        if not self.values:
            return None, None
        data_key = self.data_key or f"{self.file_key}-data"
        if data_key in self.values:
            data = self.values[data_key]
            if not isinstance(data, str):  # _plain_context admits only strings here
                raise _NotPlain
            return None, data
        if self.file_key in self.values:
            return os.path.normpath(os.path.join(self.base, self.values[self.file_key])), None
        return None, None

    def credential(self) -> Credential:
        """The file (it must exist) or the decoded inline data the loader would use."""
        path, data = self.sources()
        if not path and data:
            return Credential(data=base64.standard_b64decode(data.encode()))
        if path and file_problem(path):
            raise _NotPlain  # the loader's path says why (_take_tls_material)
        return Credential(path=path)


def namespace_of(kubeconfig: Kubeconfig, context: str) -> str | None:
    """The namespace the context names, if any (kubectl's default for namespaced lists)."""
    value = kubeconfig.contexts.get(context, {}).get("namespace")
    return str(value) if value else None


def _gateway_extension(merged: dict[str, Any], contexts: dict[str, dict[str, Any]]) -> str | None:
    """The gateway URL from any extension whose name mentions rlark (top level, preferences or contexts), but one
    holding a control character or line break (it forged lines in `rlark config` and every error naming it).
    Member-cluster contexts are never read from here: only the config file's `clusters` maps them."""
    gateway: str | None = None
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
        if isinstance(value, str) and value and value.isprintable() and gateway is None:  # a line break forged lines
            gateway = value.rstrip("/")
    return gateway


def _read(path: Path) -> object:
    """One kubeconfig file's document, read within MAX_KUBECONFIG_BYTES (a UsageError naming the bound past it, or
    for /dev/zero or an endless FIFO) and parsed within text.parse's YAML bounds (YamlBound, a ValueError)."""
    document = load_yaml(read_input(str(path), "kubeconfig", MAX_KUBECONFIG_BYTES).decode("utf-8"), _YAML_LOADER)
    if document is None:
        raise ValueError(f"Invalid kube-config. {path} file is empty")
    return document


def merge(documents: list[tuple[str, object]]) -> tuple[dict[str, Any], dict[tuple[str, str], str]]:
    """The files merged as the `kubernetes` loader (and kubectl) merge them: the first file's other keys, and for
    clusters, contexts and users the first entry of each name; plus which file each entry came from."""
    merged: dict[str, Any] = {}
    origins: dict[tuple[str, str], str] = {}
    seen: dict[str, set[Any]] = {section: set() for section in ("clusters", "contexts", "users")}
    for number, (path, document) in enumerate(documents):
        if not isinstance(document, dict):
            raise TypeError("a kubeconfig document that is not a mapping")
        if number == 0:
            merged = copy.deepcopy(document)
            for section in ("clusters", "contexts", "users"):
                merged[section] = []
        for section in ("clusters", "contexts", "users"):
            for item in document.get(section, []) or []:
                if item["name"] not in seen[section]:  # a set: 20,000 contexts were 400 million comparisons
                    seen[section].add(item["name"])
                    merged[section].append(copy.deepcopy(item))
                    origins.setdefault((section, item["name"]), path)
        if "current-context" in document:
            merged["current-context"] = document["current-context"]
    return merged, origins


def _server_extensions(merged: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Cluster entries' `rlark.io/server` extensions, by cluster name."""
    found: dict[str, dict[str, Any]] = {}
    for entry in merged.get("clusters") or []:
        cluster = entry.get("cluster") if isinstance(entry, dict) else None
        for ext in (cluster or {}).get("extensions") or []:
            if isinstance(ext, dict) and ext.get("name") == SERVER_EXTENSION and isinstance(ext.get("extension"), dict):
                found[str(entry.get("name"))] = ext["extension"]
    return found


def _first_current_context(documents: list[tuple[str, object]]) -> str | None:
    """kubectl's rule: the first file that sets current-context wins."""
    for _path, data in documents:
        if isinstance(data, dict) and data.get("current-context"):
            return str(data["current-context"])
    return None


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
