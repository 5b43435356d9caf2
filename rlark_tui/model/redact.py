"""Redaction of secrets before anything is shown, saved or recorded (C8): env values, tokens, keys, passwords.

Pure functions; they return redacted copies and never modify their input.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from typing import Any

MASK = "***"

_SECRET_WORDS = frozenset({
    "PASSWORD", "PASSWD", "PASS", "PWD", "PASSPHRASE", "SECRET", "SECRETS", "TOKEN", "KEY", "APIKEY",
    "CREDENTIAL", "CREDENTIALS", "CREDS", "AUTH", "OAUTH", "AUTHORIZATION", "BEARER", "PRIVATE", "COOKIE",
    "SIGNATURE", "DSN", "PAT",
})
_SECRET_SUFFIXES = ("PASSWORD", "PASSWD", "SECRET", "TOKEN", "APIKEY", "PRIVATEKEY", "ACCESSKEY", "SECRETKEY",
                    "SSHKEY", "AUTHKEY", "MASTERKEY", "SIGNINGKEY", "ENCRYPTIONKEY", "CREDENTIALS", "CREDENTIAL")
_PUBLIC_WORDS = frozenset({"PUBLIC", "PUBKEY"})
"""`sshPublicKey`, `RLARK_SSH_PUBLIC_KEY`: a public key is not a secret (unless the name also says token/secret)."""
_STRONG = ("PASSWORD", "PASSWD", "SECRET", "TOKEN", "CREDENTIAL")
_NAME_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")


def is_secret_name(env_name: object) -> bool:
    """Whether a variable/field name looks like it holds a secret (HF_TOKEN, WANDB_API_KEY, dbPassword, ...).

    `TOKENIZERS_PARALLELISM` or `KEYBOARD_LAYOUT` are not secret: whole words are compared.
    """
    return isinstance(env_name, str) and bool(env_name) and _secret_name(env_name)


@functools.lru_cache(maxsize=4096)
def _secret_name(name: str) -> bool:
    words = [w.upper() for w in _NAME_SPLIT.split(name) if w]
    joined = "".join(words)
    if _PUBLIC_WORDS & set(words) and not any(strong in joined for strong in _STRONG):
        return False
    if any(w in _SECRET_WORDS for w in words):
        return True
    return "PASSWORD" in joined or "SECRET" in joined or any(w.endswith(_SECRET_SUFFIXES) for w in words)


_NAME = r"[A-Za-z_][A-Za-z0-9_.-]*"
_NAME_START = r"(?:(?<![A-Za-z0-9_.-])|(?<=\]\.))"
"""A name starts a word (or follows `].`), never in the middle of one."""
_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]+-----")
_PEM_END = re.compile(r"-----END [A-Z0-9 ]+-----")
_KEY_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")
_KEY_END = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY-----")
_URL_CREDENTIALS = re.compile(r"((?<![a-zA-Z0-9+.-])[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]+:)([^\s@/]+)(@)")
_BEARER = re.compile(
    r"(\b(?:Bearer|Basic)[ \t]+|\bToken[ \t]+(?=[A-Za-z._~+/=-]*[0-9]))([A-Za-z0-9._~+/=-]{8,})", re.I)
"""`Bearer x`, `Basic x`, and `token x` when x has a digit (`token generation` in a training log is prose)."""
_BLOCK_LINES = r"[|>][-+0-9]*[ \t]*\n)(?P<value>(?:(?P=indent)(?(dash)  )[ \t]+[^\n]*(?:\n|\Z)|[ \t]*\n)+)"
_YAML_BLOCK = re.compile(
    r"(?P<prefix>^(?P<indent>[ \t]*)(?P<dash>- )?[\"']?(?P<name>" + _NAME + r")[\"']?:[ \t]*" + _BLOCK_LINES,
    re.M)
"""A YAML block scalar (`password: |` + lines indented deeper than the key) under a secret-looking name."""
_YAML_ENV_BLOCK = re.compile(
    r"(?P<prefix>^[ \t]*(?:- )?name:[ \t]*[\"']?(?P<name>" + _NAME + r")[\"']?[ \t]*\n"
    r"(?P<indent>[ \t]*)(?P<dash>(?!))?value:[ \t]*" + _BLOCK_LINES, re.M)
"""The same as an env entry's value: `- name: DB_PASSWORD` then `value: |` and its lines."""
_NOT_SECRET_VALUES = frozenset({"", MASK, "bearer", "basic", "token", "digest", "negotiate",
                                "true", "false", "none", "null", "yes", "no", "on", "off"})
"""Values never worth masking: an auth scheme (its credential follows and is masked on its own), a boolean, nothing
(`private=false`, `PASSWORD_AUTH: yes`)."""

# A name and what assigns to it, each with the pattern of the value that follows; the value is read only for a
# secret-looking name, so text full of ordinary `a=b:c` costs one pass.
_ASSIGNMENT = re.compile(_NAME_START + r"(?P<name>" + _NAME + r")(?P<quote>[\"']?)[ \t]*(?P<sep>[=:])[ \t]*")
_ASSIGNED_VALUE = re.compile(r"\"[^\"\n]*\"|'[^'\n]*'|[\"'][^\n]*|[^\s\"',;}]+")
"""A quoted value, an unterminated quote (the rest of the line), or a bare word."""
_FLAG = re.compile(r"(?<![A-Za-z0-9-])--?(?P<name>[A-Za-z][A-Za-z0-9_-]*)(?:=|[ \t]+)")
_FLAG_VALUE = re.compile(r"\"[^\"\n]*\"|'[^'\n]*'|[^\s\"']+")
_YAML_ENV = re.compile(r"name:[ \t]*[\"']?(?P<name>" + _NAME + r")[\"']?[ \t]*\n[ \t]*value:[ \t]*")
_YAML_ENV_VALUE = re.compile(r"[^\n]+")
_JSON_ENV = re.compile(r"\"name\"\s*:\s*\"(?P<name>" + _NAME + r")\"\s*,\s*\"value\"\s*:\s*")
_JSON_ENV_VALUE = re.compile(r"\"(?:[^\"\\]|\\.)*\"")
_NAMED = ((_YAML_ENV, _YAML_ENV_VALUE), (_JSON_ENV, _JSON_ENV_VALUE), (_ASSIGNMENT, _ASSIGNED_VALUE),
          (_FLAG, _FLAG_VALUE))

_TOKEN_SHAPES = re.compile(
    r"(?<![A-Za-z0-9_-])(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|hf_[A-Za-z0-9]{20,}"
    r"|sk-[A-Za-z0-9_-]{20,}|glpat-[A-Za-z0-9_-]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}"
    r"|npm_[A-Za-z0-9]{30,}|AIza[0-9A-Za-z_-]{35}|pypi-[A-Za-z0-9_-]{40,}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})"
)
"""Well-known token shapes, wherever they appear: GitHub, Hugging Face, OpenAI/Anthropic, GitLab, Slack, AWS key
ids, npm, Google API keys, PyPI, JWTs."""

_MAYBE_SECRET = re.compile(
    r"pass|pwd|secret|token|key|cred|auth|private|cookie|signature|dsn|pat(?![a-z])|bearer|basic|-----BEGIN"
    r"|://[^\s/@]+:[^\s@/]+@|gh[pousr]_|hf_|sk-|xox|AKIA|eyJ|npm_|AIza|pypi-",
    re.I,
)
"""Cheap first pass: text without any of these cannot hold a secret the patterns below would mask."""

_PROSE = re.compile(r"\b(?:a|an|the|no|your|this)[ \t]+\Z", re.I)


def _mask_value(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[0] + MASK + value[0]
    return MASK


def _names_a_field(match: re.Match) -> bool:
    """`name: value` that is not an assignment: a finding about a field (`roles[0].env.HF_TOKEN: looks like...`),
    prose (`looks like a secret: its value`), or a selector / reference term (`key: rlark.io/cluster-id`)."""
    text = match.string
    if match.re is not _ASSIGNMENT or match.group("sep") != ":" or text[match.end():match.end() + 1] in ("\"", "'"):
        return False
    before = text[max(0, match.start() - 8):match.start()]
    name = match.group("name")
    return before[-1:] in (".", "]", "/") or name.lower() in ("key", "keys") \
        or bool(_PROSE.search(before))


def _sub_named(pattern: re.Pattern, value_pattern: re.Pattern, text: str) -> str:
    """Mask the values `pattern` assigns to secret-looking names. After any other name the search goes on right
    after its `=` / `:`: the value may hold an assignment of its own (`notes: HF_TOKEN=...`)."""
    parts, copied, search_from = [], 0, 0
    while (match := pattern.search(text, search_from)) is not None:
        search_from = match.end()
        if not is_secret_name(match.group("name")) or _names_a_field(match):
            continue
        value = value_pattern.match(text, match.end())
        if value is None or value.group(0).strip("\"' )]").lower() in _NOT_SECRET_VALUES:
            continue
        parts += [text[copied:match.end()], _mask_value(value.group(0))]
        copied = search_from = value.end()
    return "".join(parts) + text[copied:]


def _mask_pem(text: str) -> str:
    """PEM bodies become `***`; a private key without its END line is masked to the end of the text."""
    parts, copied = [], 0
    while (begin := _PEM_BEGIN.search(text, copied)) is not None:
        end = _PEM_END.search(text, begin.end())
        if end is None:
            key = _KEY_BEGIN.search(text, begin.start())
            if key is not None:
                parts += [text[copied:key.end()], f"\n{MASK}"]
                copied = len(text)
            break
        parts += [text[copied:begin.end()], f"\n{MASK}\n", end.group(0)]
        copied = end.end()
    return "".join(parts) + text[copied:]


def _mask_block(match: re.Match) -> str:
    if not is_secret_name(match.group("name")) or not match.group("value").strip():
        return match.group(0)
    indent = match.group("indent") + ("  " if match.group("dash") else "") + "  "
    return match.group("prefix") + indent + MASK + ("\n" if match.group("value").endswith("\n") else "")


def redact_text(text: str) -> str:
    """Text with secrets masked: PEM blocks, `user:pass@` in URLs, bearer tokens, known token shapes,
    and values assigned to secret-looking names (`HF_TOKEN=...`, `password: ...`, `--api-key ...`).

    Linear in the length of the text: a name never starts inside a word and a value is read only when it is
    masked, so a 1 MB log line costs a few passes."""
    if not isinstance(text, str) or not _MAYBE_SECRET.search(text):
        return text
    text = _mask_pem(text)
    text = _URL_CREDENTIALS.sub(lambda m: m.group(1) + MASK + m.group(3), text)
    text = _BEARER.sub(lambda m: m.group(1) + MASK, text)
    text = _YAML_BLOCK.sub(_mask_block, text)
    text = _YAML_ENV_BLOCK.sub(_mask_block, text)
    for pattern, value_pattern in _NAMED:
        text = _sub_named(pattern, value_pattern, text)
    return _TOKEN_SHAPES.sub(MASK, text)


class LineRedactor:
    """redact_text for a stream of lines (`rlark logs`): a private key spans lines, so the lines between a
    `-----BEGIN ... PRIVATE KEY-----` line and its END line are masked whole; one state per source (Pod)."""

    def __init__(self) -> None:
        self._in_key: set[str] = set()

    def __call__(self, line: str, source: str = "") -> str:
        if source in self._in_key:
            end = _KEY_END.search(line)
            if end is None:
                return MASK
            self._in_key.discard(source)
            return MASK + line[end.start():]
        begins = list(_KEY_BEGIN.finditer(line))
        if not begins or _KEY_END.search(line, begins[-1].end()):
            return redact_text(line)
        self._in_key.add(source)
        begin = begins[-1]
        return redact_text(line[:begin.start()]) + begin.group(0) + (MASK if line[begin.end():].strip() else "")


def redact_env(env: Any) -> Any:
    """A redacted copy of an env list (`[{name, value|valueFrom}]`) or mapping (`{NAME: value}`): values of
    secret-looking names become `***`, other values have embedded secrets masked; `valueFrom` is kept."""
    if isinstance(env, Mapping):
        return {k: (MASK if is_secret_name(k) and v not in (None, "") else _redact_scalar(v))
                for k, v in env.items()}
    if isinstance(env, list):
        result = []
        for entry in env:
            if isinstance(entry, Mapping) and entry.get("value") not in (None, ""):
                entry = dict(entry)
                entry["value"] = MASK if is_secret_name(entry.get("name")) else _redact_scalar(entry["value"])
                result.append(entry)
            else:
                result.append(redact_object(entry))
        return result
    return redact_object(env)


def _redact_scalar(value: Any) -> Any:
    return redact_text(value) if isinstance(value, str) else redact_object(value)


def _redact_string(value: str) -> str:
    stripped = value.strip()
    if stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]"):
        try:
            decoded = json.loads(stripped)
        except ValueError:
            return redact_text(value)
        return json.dumps(redact_object(decoded), separators=(",", ":"))
    return redact_text(value)


_REFERENCE_WORDS = frozenset({"NAME", "NAMES", "REF", "PATH", "FILE", "DIR", "KIND", "TYPE", "MOUNT"})
"""A field named `secretName`, `secretKeyRef`, `tokenPath` or `client-key` ... `File` names a secret, it is not one."""


def _is_secret_field(key: object) -> bool:
    """Object field whose string value is masked whole: `token`, `client-key-data`, `password`, `access-token`.

    Not `key`/`keys` (selector terms, secretKeyRef, volume items) and not names of references (`secretName`)."""
    if not isinstance(key, str) or key.lower() in ("key", "keys") or not is_secret_name(key):
        return False
    words = [w.upper() for w in _NAME_SPLIT.split(key) if w]
    return words[-1] not in _REFERENCE_WORDS


def redact_object(obj: Any) -> Any:
    """A redacted deep copy of an API object (or any JSON-like value, e.g. a parsed kubeconfig): every `env`
    list and every string (scripts, annotations, JSON-in-annotations) redacted; string values of secret-looking
    fields (`token`, `client-key-data`, `password`) and a Secret's `data`/`stringData` values masked."""
    if isinstance(obj, str):
        return _redact_string(obj)
    if isinstance(obj, list):
        return [redact_object(item) for item in obj]
    if not isinstance(obj, Mapping):
        return obj
    is_secret_kind = obj.get("kind") == "Secret"
    result = {}
    for key, value in obj.items():
        if key == "env" and isinstance(value, (list, Mapping)):
            result[key] = redact_env(value)
        elif is_secret_kind and key in ("data", "stringData") and isinstance(value, Mapping):
            result[key] = {k: MASK for k in value}
        elif _is_secret_field(key) and isinstance(value, (str, int, float)) and not isinstance(value, bool) \
                and value != "":
            result[key] = MASK
        else:
            result[key] = redact_object(value)
    return result
