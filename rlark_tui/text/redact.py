"""Redaction of secrets before anything is shown, saved or recorded (C8): env values, tokens, keys, passwords.

Pure functions; they return redacted copies and never modify their input.
"""

from __future__ import annotations

import base64
import functools
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TypeGuard
from urllib.parse import quote, quote_plus

from rlark_tui.text.parse import load_json
from rlark_tui.text.sanitize import clean, compiled, control_at, has_control
from rlark_tui.text.sinks import CUT_MARK

MASK = "***"
PLACEHOLDER = "***masked***"
"""What `rlark clone` prints instead of a secret value: YAML quotes it (`'***masked***'`, a bare `*` starts an
alias), and `submit` refuses a draft or manifest that still holds it, naming the field (see placeholder_fields)."""

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


def is_secret_name(env_name: object) -> TypeGuard[str]:
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


_NAME = r"[A-Za-z_][A-Za-z0-9_.-]*+"
"""Possessive: in every pattern below a name is followed by a character that cannot be part of one, so a shorter
name never matches where the whole one did not, and the engine need not try them all."""
_NAME_START = r"(?:(?<![A-Za-z0-9_.-])|(?<=\]\.))"
"""A name starts a word (or follows `].`), never in the middle of one."""
_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]+-----")
_PEM_END = re.compile(r"-----END [A-Z0-9 ]+-----")
_KEY_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")
_KEY_END = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY-----")
_URL_CREDENTIALS = re.compile(r"((?<![a-zA-Z0-9+.-])[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]+:)([^\s@/]+)(@)")
_USER_FLAG = re.compile(r"((?<![A-Za-z0-9-])(?:-[uU]|--user|--proxy-user)(?:=|[ \t]+)[\"']?[^\s:\"'/]*:)([^\s\"']+)")
"""curl's (and wget's, httpie's) `-u user:password`, `--user=user:password`, `-U`/`--proxy-user`: the password
after the first colon (`python -u train.py`, `--user bob` have no colon, `ls -u /a:b` a path, and stay)."""
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
_PLACEHOLDER = re.compile(r"<[^<>\s]*>|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\$\([^()\s]*\)|\.\.\.|\*+|value")
"""Not a value but a stand-in for one: `key=value` in a usage message, `--token=$HF_TOKEN` or `$(cat f)` in a
script, `<token>` in help text, `***` already masked."""


def is_plain_value(value: str) -> bool:
    """A value a secret-looking name may hold that is no secret: a mode or scheme word (`RAY_AUTH_MODE=token`), a
    boolean, a placeholder or variable reference, nothing."""
    stripped = value.strip("\"'\\ )]`")
    return stripped.lower() in _NOT_SECRET_VALUES or stripped == PLACEHOLDER or _PLACEHOLDER.fullmatch(stripped) is not None

# A name and what assigns to it, each with the pattern of the value that follows; the value is read only for a
# secret-looking name, so text full of ordinary `a=b:c` costs one pass.
_ASSIGNMENT = re.compile(_NAME_START + r"(?P<name>" + _NAME + r")(?P<quote>\\*[\"']?)[ \t]*(?P<sep>[=:])[ \t]*")
_ASSIGNED_VALUE = re.compile(r"(?P<escaped>\\+)[\"'][^\"'\n]*?(?P=escaped)[\"']|\\+[\"'][^\s,;}]*"
                             r"|\"[^\"\n]*\"|'[^'\n]*'|[\"'][^\n]*|[^\s\"'`,;}]+")
"""An escaped quoted value (`\"pw\"` in a script holding JSON, deeper in JSON of that script), a quoted value, an
unterminated quote (the rest of the line), or a bare word (a backtick ends it: `key=value` in a message)."""
_FLAG = re.compile(r"(?<![A-Za-z0-9-])--?(?P<name>[A-Za-z][A-Za-z0-9_-]*)(?:=|[ \t]+|(?P<q>[\"']),[ \t]*(?P=q))")
"""A flag and what gives it its value: `=`, a space, or the next item of an argv list as Python and JSON print
it (`'--password', 'x'`: a kubeconfig exec plugin's args in the loader's log, a command a Job's code logs)."""
_FLAG_VALUE = re.compile(r"\"[^\"\n]*\"|'[^'\n]*'|[^\s\"']+")
_YAML_ENV = re.compile(r"name:[ \t]*[\"']?(?P<name>" + _NAME + r")[\"']?[ \t]*\n[ \t]*value:[ \t]*")
_YAML_ENV_VALUE = re.compile(r"[^\n]+")
_JSON_ENV = re.compile(r"\\*([\"'])name\\*\1\s*:\s*\\*[\"'](?P<name>" + _NAME + r")\\*[\"']\s*,\s*\\*\1value\\*\1\s*:\s*")
_JSON_ENV_VALUE = re.compile(r"(?P<escaped>\\+)\"[^\"\n]*?(?P=escaped)\"|\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\\n]|\\.)*'")
"""An env entry as JSON prints it, or Python (`{'name': 'DB_PASSWORD', 'value': 'x'}`: a Python dict's repr, as the
kubernetes loader logs a kubeconfig entry and a Job's code prints a container's env), and its value."""
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

_SECRET_WORDS_TEXT = (
    r"p(?:ass|wd|rivate|at(?![a-z])|ypi-)|s(?:ecret|ignature|k-)|token|key|c(?:red|ookie)|a(?:uth|kia|iza)|dsn"
    r"|b(?:earer|asic)|-----begin|gh[pousr]_|hf_|xox|eyj|npm_|://[^\s/@]+:[^\s@/]+@|-u[ \t=]|-user[ \t=]")
"""What the cheap first pass looks for in the lower-cased text: text without any of these cannot hold a secret
the patterns below would mask."""
_MAYBE_SECRET = re.compile(
    r"k(?:(?<=tok)en|ey|(?<=cook)ie|(?<=ak)ia|(?<=sk)-)|p(?:ass|wd|at(?![a-z])|ypi-|(?<=np)m_)|v(?<=priv)ate"
    r"|c(?:(?<=sec)ret|red)|g(?:(?<=sig)nature|h[pousr]_)|u(?<=au)th|z(?<=aiz)a|d(?=sn)"
    r"|b(?:earer|asic|(?<=-----b)egin)|j(?<=eyj)|f(?<=hf)_|o(?<=xo)x|://[^\s/@]+:[^\s@/]+@"
    r"|u(?<=-u)(?=[ \t=])|r(?<=-user)(?=[ \t=])")
"""The first pass itself (case-sensitive, on `text.lower()`): it finds a match exactly where _SECRET_WORDS_TEXT
does, but each word is found by one of its rarer letters (`k` of `token`, `v` of `private`, looking back for the
letters before it), so the regex engine stops at a few places per line instead of at most letters. The log pane
runs it on every line (tests/model/test_redact_prefilter.py holds the two to the same answers)."""

_PROSE = re.compile(r"\b(?:a|an|the|no|your|this)[ \t]+\Z", re.I)


_QUOTED = re.compile(r"(?P<open>\\*[\"'])(?s:.*)(?P=open)")


def _mask_value(value: str) -> str:
    """The masked value in the quotes it came in, escaped ones too (`\"***\"`)."""
    quoted = _QUOTED.fullmatch(value) if len(value) >= 2 else None
    return quoted.group("open") + MASK + quoted.group("open") if quoted else MASK


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
        if value is None or is_plain_value(value.group(0)):
            continue
        parts += [text[copied:match.end()], _mask_value(value.group(0))]
        copied = search_from = value.end()
    return "".join(parts) + text[copied:]


_BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{16,}={0,2}(?=\s|\\|\Z)")
_BASE64_LINE = re.compile(r"[A-Za-z0-9+/]{4,}={0,2}|[A-Za-z0-9+/]+={1,2}")
_PEM_HEADER = re.compile(r"(?:Proc-Type|DEK-Info|Comment):")
_BODY_LINE = re.compile(r"[A-Za-z0-9+/]{64}")
_BODY_LENGTH = (64, 66)
"""The length of a line _BODY_LINE can match (64 characters, perhaps with a `\r` or a space around)."""
_HEX = re.compile(r"[0-9a-fA-F]+")
_BODY_AT = re.compile(r"\n[^\S\n]{0,2}[A-Za-z0-9+/]{64}[^\S\n]{0,2}(?=\n|\Z)")
"""A newline and a line _is_body_line may take for a key's body (its 64 base64 characters, at most two spaces
around): the lines of a batch that can open a key, found with one search that stops only at line starts."""


def _is_key_line(line: str) -> bool:
    """A line that can be part of a private key's body: base64 (a whole line of it, or a long run first), or a
    PEM header (`Proc-Type:`, `DEK-Info:`). Blank lines are neither: see _key_lines."""
    stripped = line.strip()
    return bool(_BASE64_LINE.fullmatch(stripped) or _BASE64_RUN.match(stripped) or _PEM_HEADER.match(stripped))


def _is_body_line(line: str) -> bool:
    """A line only a PEM body has: exactly 64 base64 characters, not all hex (a sha256 digest is 64 hex)."""
    stripped = line.strip()
    return _BODY_LINE.fullmatch(stripped) is not None and _HEX.fullmatch(stripped) is None


def _key_lines(lines: list[str]) -> int:
    """How many of `lines` (those after a key's BEGIN line) belong to its body: key lines and blank lines between
    them, up to the first other line (an unterminated key masks at most its base64, never the rest of a log)."""
    count = 0
    for index, line in enumerate(lines):
        if _is_key_line(line):
            count = index + 1
        elif line.strip():
            break
    return count


def _mask_unterminated(rest: str) -> str:
    """`rest` follows a private key's BEGIN with no END after it: the rest of the BEGIN line and the key lines
    after it become `***`; what follows them stays."""
    first, newline, tail = rest.partition("\n")
    lines = tail.split("\n") if newline else []
    body = _key_lines(lines)
    masked = MASK if first.strip() else first
    if body:
        return masked + "\n" + MASK + "".join("\n" + line for line in lines[body:])
    return masked + newline + tail


def _mask_before_end(text: str) -> str:
    """The key lines right before an END line that has no BEGIN in `text` (the text starts inside a key)."""
    end = _KEY_END.search(text)
    if end is None:
        return text
    line_start = text.rfind("\n", 0, end.start()) + 1
    before = text[:line_start].split("\n")[:-1]
    count = 0
    for line in reversed(before):
        if not _is_key_line(line):
            break
        count += 1
    prefix = text[line_start:end.start()]
    if not count and not prefix.strip():
        return text
    kept = before[:len(before) - count]
    return "".join(line + "\n" for line in kept) + MASK + ("\n" if count and not prefix.strip() else "") \
        + text[end.start():]


def _mask_pem(text: str) -> str:
    """PEM bodies between BEGIN and END become `***`. A private key without END masks its base64 lines only; a
    text that starts inside a key (an END with no BEGIN) masks the key lines before the END."""
    parts: list[str] = []
    copied = 0
    while (begin := _PEM_BEGIN.search(text, copied)) is not None:
        end = _PEM_END.search(text, begin.end())
        if end is None:
            break
        parts += [_mask_before_end(text[copied:begin.start()]) if not parts else text[copied:begin.start()],
                  begin.group(0), f"\n{MASK}\n", end.group(0)]
        copied = end.end()
    rest = text[copied:]
    key = _KEY_BEGIN.search(rest)
    if key is not None:
        head = rest[:key.start()]
        rest = (head if parts else _mask_before_end(head)) + key.group(0) + _mask_unterminated(rest[key.end():])
    elif not parts:
        rest = _mask_before_end(rest)
    return "".join(parts) + rest


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
    if not isinstance(text, str):
        return text
    lowered = text.lower()
    if not _MAYBE_SECRET.search(lowered):
        return text
    # Each pass runs only where it can match. A mask (`***`) never makes a `-----`, `://` or word appear, so the
    # words are tested on the text as it came; only a PEM mask adds newlines, so those are tested after it (a log
    # line has none: no YAML pass).
    if "-----" in text:
        text = _mask_pem(text)
    if "://" in text:
        text = _URL_CREDENTIALS.sub(lambda m: m.group(1) + MASK + m.group(3), text)
    if "-u" in lowered:
        text = _USER_FLAG.sub(lambda m: m.group(1) + MASK, text)
    if "bearer" in lowered or "basic" in lowered or "token" in lowered:
        text = _BEARER.sub(lambda m: m.group(1) + MASK, text)
    lines = "\n" in text
    if lines:
        text = _YAML_BLOCK.sub(_mask_block, text)
        text = _YAML_ENV_BLOCK.sub(_mask_block, text)
    for pattern, value_pattern in _NAMED:
        if lines or pattern is not _YAML_ENV:
            text = _sub_named(pattern, value_pattern, text)
    return _TOKEN_SHAPES.sub(MASK, text)


class LineRedactor:
    """redact_text for a stream of lines (`rlark logs`, the log pane): one state per source (Pod).

    A private key spans lines: after a `-----BEGIN ... PRIVATE KEY-----` line, its key lines are masked up to END,
    or up to the first line that is not base64 when END never comes. A read that starts inside a key (`--tail`)
    sees body lines first: a 64-character base64 line starts the same state. `known` values (the Job's own
    secrets, see secret_values) are masked wherever they appear. With `keys_only`, lines are otherwise left for
    a later redact_text (the run check's evidence, redacted as it is shown): private keys and known values only,
    at the cost of two substring tests per ordinary line."""

    def __init__(self, known: Iterable[str] | KnownSecrets = (), keys_only: bool = False) -> None:
        self._in_key: set[str] = set()
        self.known = known if isinstance(known, KnownSecrets) else KnownSecrets(known)
        self._redact = _unchanged if keys_only else redact_text

    def __call__(self, line: str, source: str = "") -> str:
        if self.known:
            line = self.known.mask(line)
        if source not in self._in_key and "-----" not in line and not _BODY_LENGTH[0] <= len(line) <= _BODY_LENGTH[1] \
                and (self._redact is _unchanged or not _MAYBE_SECRET.search(line.lower())):
            return line  # nearly every line of a log: a few substring tests and one search (20,000 lines/s)
        if source in self._in_key:
            end = _KEY_END.search(line)
            if end is not None:
                self._in_key.discard(source)
                return MASK + line[end.start():]
            if not line.strip():
                return line
            if _is_key_line(line):
                return MASK
            self._in_key.discard(source)
        begins = list(_KEY_BEGIN.finditer(line)) if "-----" in line else []
        if begins and not _KEY_END.search(line, begins[-1].end()):
            self._in_key.add(source)
            begin = begins[-1]
            return self._redact(line[:begin.start()]) + begin.group(0) + (MASK if line[begin.end():].strip() else "")
        if not begins and _BODY_LENGTH[0] <= len(line) <= _BODY_LENGTH[1] and _is_body_line(line):
            self._in_key.add(source)
            return MASK
        return self._redact(line)

    def add_known(self, values: Iterable[str]) -> None:
        """Mask these values too from the next line on: a log view learns the values of the Secrets its Pods
        reference as it starts reading each (cluster/secrets.py)."""
        new = [value for value in values if value not in self.known.given]
        if new:
            self.known = KnownSecrets([*self.known.given, *new])

    def lines(self, texts: list[str], source: str = "") -> list[str]:
        """`[self(text, source) for text in texts]` for a batch of one source's lines (what a stream read at
        once), at a fraction of the cost: one scan of the whole batch for what __call__'s fast path tests (a
        `-----`, a line of a key body's length, a known value, a word of the first pass) finds the few lines
        that need __call__; the others, read while no key is open, are returned as they are. Values given to
        add_known while a batch is masked (on another Pod's thread) count from the next batch on."""
        return self._batch(texts, source, "\n".join(texts))

    def _batch(self, texts: list[str], source: str, joined: str, dashes: bool = True) -> list[str]:
        """`lines` of `texts` joined by newlines as `joined`; without `dashes` the caller found no `-----` in it."""
        if joined.count("\n") != len(texts) - 1:  # a text holds a newline itself: line by line
            return [self(text, source) for text in texts]
        flagged = self._flagged(joined, dashes)
        if not flagged and source not in self._in_key:
            return list(texts)
        out = list(texts)
        index, size, in_key = 0, len(texts), self._in_key
        for next_flagged in [*flagged, size]:
            while index < next_flagged and source in in_key:  # a key's lines up to its end (or the first other)
                out[index] = self(texts[index], source)
                index += 1
            if next_flagged < size:
                out[next_flagged] = self(texts[next_flagged], source)
                index = next_flagged + 1
        return out

    def _flagged(self, joined: str, dashes: bool) -> list[int]:
        """Indexes (ascending) of the lines of `joined` (the texts joined by newlines) that __call__ must see even
        while no key is open: every other line it returns unchanged, without a change of state."""
        found = set(_lines_with(joined, lambda text, at: text.find("-----", at))) if dashes else set()
        framed = "\n" + joined  # a match of _BODY_AT at index i of `framed` is the line starting at i of `joined`
        found.update(_lines_with(joined, lambda text, at: _start(_BODY_AT.search(framed, at))))
        for value in self.known.values:
            if value in joined:
                found.update(_lines_with(joined, lambda text, at, value=value: text.find(value, at)))
        if self.known and has_control(joined):  # a value split by an escape sequence is whole as it shows (mask)
            found.update(_lines_with(joined, control_at))
        if self._redact is not _unchanged:
            found.update(_lines_with(joined.lower(), _first_pass_at))
        return sorted(found)

    def backlog(self, lines: list[tuple[str, str]]) -> list[str]:
        """A whole read at once (`(source, text)` pairs, oldest first): as line by line, and a source's key lines
        before its first END with no BEGIN before it (the read started inside a key) are masked too."""
        by_source: dict[str, list[int]] = {}
        for index, (source, _) in enumerate(lines):
            by_source.setdefault(source, []).append(index)
        out: list[str] = [""] * len(lines)
        for source, indexes in by_source.items():
            for index, text in zip(indexes, self.source_backlog([lines[index][1] for index in indexes], source)):
                out[index] = text
        return out

    def source_backlog(self, texts: list[str], source: str = "") -> list[str]:
        """`backlog` of one source's lines."""
        joined = "\n".join(texts)
        if "-----" not in joined:  # no BEGIN or END: no key lines before an END to find, none to flag
            return self._batch(texts, source, joined, dashes=False)
        orphan: set[int] = set()
        for position, text in enumerate(texts):
            if _KEY_BEGIN.search(text):
                break
            if _KEY_END.search(text):
                for before in range(position - 1, -1, -1):
                    if not _is_key_line(texts[before]):
                        break
                    orphan.add(before)
                break
        return [MASK if index in orphan else self(text, source) for index, text in enumerate(texts)]


def _lines_with(text: str, find) -> list[int]:
    """Indexes of the lines of `text` (split at newlines) where `find(text, at)` (the index of the next hit at
    or after `at`, -1 for none) hits; after a hit the search goes on at the next line."""
    found, line, counted, at = [], 0, 0, 0
    while (hit := find(text, at)) >= 0:
        line += text.count("\n", counted, hit)
        found.append(line)
        end = text.find("\n", hit)
        if end < 0:
            break
        counted = at = end + 1
        line += 1
    return found


def _first_pass_at(text: str, at: int) -> int:
    return _start(_MAYBE_SECRET.search(text, at))


def _start(match: re.Match | None) -> int:
    return match.start() if match is not None else -1


def _unchanged(text: str) -> str:
    return text


def redact_lines(lines: Iterable[str], known: Iterable[str] | KnownSecrets = (), keys_only: bool = False
                 ) -> list[str]:
    """The lines of one source (a Pod's log) redacted as a whole read: keys across lines, known values (and,
    unless `keys_only`, everything redact_text masks). A caller that masks many reads with the same values passes
    their KnownSecrets, made once: making one builds every shape of every value."""
    return LineRedactor(known, keys_only).source_backlog(list(lines))


def _bytes(value: str) -> bytes:
    """The bytes a value stands for: a value read with surrogateescape gets its undecodable bytes back; any other
    lone surrogate (JSON allows one) is encoded as is."""
    try:
        return value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogatepass")


def _shapes(value: str) -> set[str]:
    """The forms a value prints in: as is and without its trailing newline (a Secret made from a file ends in
    one), each line of a multi-line value (a YAML block scalar echoed by a shell prints line by line; printf '%q'
    and `echo -e` forms give `\\n` between them), as an unquoted `echo $VALUE` prints it (every run of spaces, tabs
    and newlines one space), each JSON-escaped, percent-encoded (a password in a URL a library logs:
    `postgres://u:p%40ss@db`), and in base64 (`printf %s "$V" | base64`, `echo "$V" | base64`, a Basic header),
    line by line when a tool wraps it. A value that is not UTF-8 (read with surrogateescape, cluster/secrets.py) prints as a text
    decoder shows it, each undecodable byte U+FFFD, and so does each piece between them. Lines and pieces shorter
    than _MIN_KNOWN are left out."""
    raw = _bytes(value)
    shown = raw.decode("utf-8", "replace")
    forms = {value, shown, shown.rstrip("\n"), shown.strip(), " ".join(shown.split())}
    lines = [line.strip() for line in shown.splitlines()]
    if len(lines) > 1:
        forms.update(line for line in lines if len(line) >= _MIN_KNOWN)
        body = shown.rstrip("\n")
        forms.update({body.replace("\n", "\\n"), body.replace("\n", " ")})
    if "\ufffd" in shown:
        forms.update(piece.strip() for piece in shown.split("\ufffd"))
    escaped = [json.dumps(form)[1:-1] for form in forms]
    forms.update(escaped)
    forms.update(form.translate(_GO_JSON) for form in escaped)
    trimmed = raw.rstrip(b"\n")
    percent = {quote(trimmed, safe=""), quote(trimmed), quote_plus(trimmed, safe="")}
    forms.update(percent)
    forms.update(compiled(_PERCENT).sub(_lower, form) for form in percent)
    encoded = {base64.b64encode(form).decode("ascii") for form in {raw, raw + b"\n", trimmed, trimmed + b"\n"}}
    forms.update(encoded)
    forms.update(core for form in {raw, trimmed} for core in _base64_cores(form) if len(core) >= 8)
    forms.update(piece for line in encoded for width in _BASE64_WRAPS if len(line) > width
                 for piece in (line[at:at + width] for at in range(0, len(line), width)) if len(piece) >= 8)
    return {form for form in forms if len(form) >= _MIN_KNOWN or form == value}


def _base64_cores(raw: bytes) -> Iterator[str]:
    """What base64 of `raw` is whatever bytes come before and after it (a Basic header's `user:`, a docker config's
    auth, a JWT's part): for each of the 3 places it may start in a group of 3 bytes, the characters of the groups
    that hold its bytes alone, and base64url's spelling of them (no padding in either)."""
    for offset in (0, 1, 2):
        core = base64.b64encode(b"\0" * offset + raw).decode("ascii")[4 if offset else 0:(offset + len(raw)) // 3 * 4]
        yield core
        yield core.translate(_URL_SAFE)


_URL_SAFE = str.maketrans("+/", "-_")
_GO_JSON = str.maketrans({"&": "\\u0026", "<": "\\u003c", ">": "\\u003e", "\u2028": "\\u2028", "\u2029": "\\u2029"})
"""What Go's encoding/json escapes besides what Python's json does (a Go program's JSON log line)."""
_PERCENT = r"%[0-9A-F]{2}"


def _lower(escape: re.Match) -> str:
    """A percent escape in lower case, as some encoders write it (`%2f`)."""
    return escape.group().lower()


_BASE64_WRAPS = (64, 76)
"""Where base64 tools wrap their lines (openssl, PEM: 64; coreutils base64, Python's encodebytes: 76): a long
value's base64 prints line by line, and its first line alone decodes to its first 48 or 57 bytes. Each line of
8 characters or more is masked."""


class KnownSecrets:
    """Exact values to mask wherever they appear, in every shape they print in (_shapes): longest first, so a
    value that holds another is masked whole. A line without any costs one substring search per value. `given`
    keeps the values as given (add_known adds to them, not to their shapes)."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        self.given = tuple(dict.fromkeys(filter(None, values)))
        self.values = tuple(sorted({form for value in self.given for form in _shapes(value)}, key=len, reverse=True)) \
            if self.given else ()

    def __bool__(self) -> bool:
        return bool(self.values)

    def mask(self, text: str) -> str:
        """`text` with every shape of every value masked; a text holding an escape sequence or another control is
        also masked as a terminal shows it (sanitize.clean): a value a Pod split with one (`hunter2-ESC[0msecret`)
        is whole there, so such a text is returned cleaned and masked (its sequences gone), any other as it came."""
        text = self._replaced(text)
        if self.values and not text.isprintable() and has_control(text):
            shown = clean(text)
            masked = self._replaced(shown)
            if masked != shown:
                return masked
        return text

    def _replaced(self, text: str) -> str:
        for value in self.values:
            if value in text:
                text = text.replace(value, MASK)
        if self.values and "more characters)" in text:
            text = self._cut_starts(text)
        return text

    def _cut_starts(self, text: str) -> str:
        """`text` with the start of a value that a cut (sinks.cut) left just before its mark masked: a text cut
        before it was masked (an error that quotes an answer, cluster/errors.quoted) showed the first characters of
        a value across the cut, which no whole value matches."""
        parts: list[str] = []
        at = 0
        for mark in compiled(CUT_MARK).finditer(text):
            head = text[at:mark.start()]
            length = max((size for value in self.values
                          for size in range(min(len(value) - 1, len(head)), _MIN_KNOWN - 1, -1)
                          if head.endswith(value[:size])), default=0)
            parts += [head[:len(head) - length], MASK if length else "", mark.group()]
            at = mark.end()
        parts.append(text[at:])
        return "".join(parts)

    def mask_lines(self, text: str) -> str:
        """`mask` of each line on its own, the line breaks kept: a form that ends in a newline (a Secret made from a
        file) would otherwise take the break after the value with it, and join a document's two lines."""
        if not self.values:
            return text
        return "\n".join(map(self.mask, text.split("\n")))


_MIN_KNOWN = 4
"""A shorter value of a secret-looking env entry is not masked in free text: `DB_PASSWORD=x` would hide every x."""


def _known_value(name: object, value: object) -> str | None:
    if not isinstance(value, str) or len(value) < _MIN_KNOWN or not is_secret_name(name) or is_plain_value(value):
        return None
    words = [w.upper() for w in _NAME_SPLIT.split(name) if w]
    if words[-1] in _REFERENCE_WORDS or value.startswith(("/", "~/", "./")):
        return None  # PRIVATE_KEY_PATH=/etc/key: where the secret is, not the secret
    return value


def _env_items(node: Any) -> Iterator[tuple[str, Mapping]]:
    """Every env entry in `node` (a Job, Task or Pod, at any depth, the spec JSON of annotations too), each as
    ("entry", an `env` list's entry), ("map", an `env` mapping) or ("from", an `envFrom` entry), in no set order.
    Walked with a stack of its own: an object nested 50,000 deep is read to its end, without recursion. Only what
    may hold an entry is stacked (a list, a mapping, a string of JSON that names env), so a leaf costs one type
    check: redact_object walks each object it is given for these first."""
    stack = [node] if _may_hold_env(node) else []
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            try:
                stack.append(load_json(node))  # the submitted-spec and launch-record annotations hold it as JSON
            except ValueError:
                continue
        elif isinstance(node, list):
            stack.extend(item for item in node if _may_hold_env(item))
        else:
            for key, value in node.items():
                if key == "env" and isinstance(value, list):
                    yield from (("entry", entry) for entry in value if isinstance(entry, Mapping))
                elif key == "env" and isinstance(value, Mapping):
                    yield "map", value
                elif key == "envFrom" and isinstance(value, list):
                    yield from (("from", entry) for entry in value if isinstance(entry, Mapping))
                elif _may_hold_env(value):
                    stack.append(value)


def _may_hold_env(node: object) -> bool:
    if isinstance(node, (dict, list)):
        return True
    if isinstance(node, str):
        return node[:1] in ("{", "[") and "env" in node
    return isinstance(node, Mapping)


def _secret_ref(kind: str, entry: Mapping) -> tuple[str, str | None] | None:
    """(Secret name, key or None for all keys) that an env entry takes its value from, if any."""
    ref = dig_mapping(entry, "valueFrom", "secretKeyRef") if kind == "entry" else \
        entry.get("secretRef") if kind == "from" else None
    if not isinstance(ref, Mapping) or not isinstance(ref.get("name"), str) or not ref["name"]:
        return None
    key = ref.get("key") if kind == "entry" else None
    return ref["name"], key if isinstance(key, str) else None


def secret_refs(obj: Any) -> frozenset[str]:
    """The names of the Secrets `obj`'s env entries take values from (`valueFrom.secretKeyRef`,
    `envFrom.secretRef`), found as secret_values finds them."""
    return frozenset(ref[0] for kind, entry in _env_items(obj) if (ref := _secret_ref(kind, entry)) is not None)


def secret_values(obj: Any, secrets: Mapping[str, Mapping[str, str]] | None = None) -> frozenset[str]:
    """The values of every secret-looking env entry in `obj` (a Job, Task or Pod: `env` lists and mappings at any
    depth) and, with `secrets` (Secret name -> {key: value}, decoded), of the Secret keys those entries reference
    (`valueFrom.secretKeyRef`, `envFrom.secretRef`), whatever the entry's name. Plain words (`RAY_AUTH_MODE:
    token`), paths and values shorter than 4 characters are left out: masking them would hide ordinary text."""
    secrets = secrets or {}
    found: set[str] = set()
    for kind, entry in _env_items(obj):
        if kind == "map":
            found.update(known for k, v in entry.items() if (known := _known_value(k, v)) is not None)
            continue
        if kind == "entry" and (known := _known_value(entry.get("name"), entry.get("value"))) is not None:
            found.add(known)
        ref = _secret_ref(kind, entry)
        data = secrets.get(ref[0]) if ref is not None else None
        if ref is not None and isinstance(data, Mapping):
            found.update(v for k, v in data.items() if (ref[1] is None or k == ref[1]) and isinstance(v, str)
                         and len(v) >= _MIN_KNOWN and not is_plain_value(v))
    return frozenset(found)


def dig_mapping(obj: Mapping, *keys: str) -> Mapping | None:
    found: object = obj
    for key in keys:
        found = found.get(key) if isinstance(found, Mapping) else None
    return found if isinstance(found, Mapping) else None


def redact_env(env: Any, _depth: int = 0) -> Any:
    """A redacted copy of an env list (`[{name, value|valueFrom}]`) or mapping (`{NAME: value}`): values of
    secret-looking names become `***`, other values have embedded secrets masked; `valueFrom` is kept."""
    if isinstance(env, Mapping):
        return {k: (MASK if is_secret_name(k) and _maskable(v) else _redact_scalar(v, _depth)) for k, v in env.items()}
    if isinstance(env, list):
        result = []
        for entry in env:
            if isinstance(entry, Mapping) and entry.get("value") not in (None, ""):
                entry = dict(entry)
                entry["value"] = MASK if is_secret_name(entry.get("name")) and _maskable(entry["value"]) \
                    else _redact_scalar(entry["value"], _depth)
                result.append(entry)
            else:
                result.append(redact_object(entry, _depth + 1))
        return result
    return redact_object(env, _depth)


def _maskable(value: Any) -> bool:
    """A secret-looking name's value is masked whole unless it is nothing or a plain word (`token`, `true`)."""
    return value not in (None, "") and not (isinstance(value, str) and is_plain_value(value))


def _redact_scalar(value: Any, depth: int = 0) -> Any:
    return redact_text(value) if isinstance(value, str) else redact_object(value, depth + 1)


def _redact_string(value: str, depth: int = 0) -> str:
    stripped = value.strip()
    if stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]"):
        try:
            decoded = load_json(stripped)
        except ValueError:
            return redact_text(value)
        return json.dumps(redact_object(decoded, depth), separators=(",", ":"))
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


MAX_DEPTH = 100
"""How deep redact_object copies: a value nested deeper (a 50,000-deep JSON annotation) becomes CUT, so redaction
never recurses without bound and never shows what it did not redact."""
CUT = f"{MASK} (cut: nested deeper than {MAX_DEPTH})"


def redact_object(obj: Any, _depth: int = 0, _known: KnownSecrets | None = None) -> Any:
    """A redacted deep copy of an API object (or any JSON-like value, e.g. a parsed kubeconfig): every `env`
    list and every string (scripts, annotations, JSON-in-annotations) redacted; string values of secret-looking
    fields (`token`, `client-key-data`, `password`) and a Secret's `data`/`stringData` values masked, and the
    object's own secret env values (`secret_values`) wherever else they appear, line by line (a run script that
    echoed an API_KEY's value showed it in `rlark describe`, `-o yaml` and the TUI's YAML tab, beside the masked
    entry). What is nested deeper than MAX_DEPTH (JSON in a string counts from the string's depth) is CUT."""
    if not isinstance(obj, (str, list, Mapping)):
        return obj  # a number, a bool, None: nothing to mask, and no env entries to look for
    if _known is None:
        _known = KnownSecrets(secret_values(obj))
    if _depth > MAX_DEPTH:
        return CUT
    if isinstance(obj, str):
        return _known.mask_lines(_redact_string(obj, _depth))
    if isinstance(obj, list):
        return [redact_object(item, _depth + 1, _known) for item in obj]
    is_secret_kind = obj.get("kind") == "Secret"
    result = {}
    for key, value in obj.items():
        if key == "env" and isinstance(value, (list, Mapping)):
            result[key] = redact_object(redact_env(value, _depth + 1), _depth + 1, _known) if _known else \
                redact_env(value, _depth + 1)
        elif is_secret_kind and key in ("data", "stringData") and isinstance(value, Mapping):
            result[key] = {k: MASK for k in value}
        elif _is_secret_field(key) and isinstance(value, (str, int, float)) and not isinstance(value, bool) \
                and _maskable(value):
            result[key] = MASK
        else:
            result[key] = redact_object(value, _depth + 1, _known)
    return result


_OWN_STARS = "RLARKOWNSTARS"
"""Stands in for a `***` the text had before redaction (`echo '*** done ***'`), so only the masks redaction adds
become PLACEHOLDER. A secret-looking name assigned `***` is masked as any other value: surely a masked copy."""


def redact_related(obj: Any, related: Any) -> Any:
    """redact_object of `obj` knowing also the secret env values of `related` (a Job's Tasks and Pods: the other
    answers that say what it runs with), so a value that one answer shows under a name that says nothing (an entry a
    hostile control plane renamed `0`, its value as it was) is masked wherever another answer names it a secret."""
    return redact_with(obj, secret_values(related))


def redact_with(obj: Any, values: Iterable[str]) -> Any:
    """redact_object of `obj` knowing also `values` (the secret env values of answers related to it)."""
    return redact_object(obj, 0, KnownSecrets(secret_values(obj) | frozenset(values)))


def with_placeholders(value: Any, _known: KnownSecrets | None = None, *, related: Any = None) -> Any:
    """A redacted copy of a job draft (as a mapping) for `rlark clone` on stdout: where redact_object masks a
    whole value or part of a string, the mask is PLACEHOLDER, so that a submit of the copy is refused instead of
    sending `***` as a password. The draft's own secret env values (secret_values of the whole draft) are masked
    wherever it holds them: each role knew only its own, so another role's entry of another name, or the run
    script, printed the value; and so are those of `related` (the Job's Tasks, as redact_related knows them)."""
    if _known is None:
        _known = KnownSecrets(secret_values(value if related is None else [value, related]))
    if isinstance(value, str):
        guarded = value.replace(MASK, _OWN_STARS)
        masked = _known.mask_lines(_redact_string(guarded))
        return value if masked == guarded else masked.replace(MASK, PLACEHOLDER).replace(_OWN_STARS, MASK)
    if isinstance(value, list):
        return [with_placeholders(item, _known) for item in value]
    if isinstance(value, Mapping):
        redacted = redact_object(value, 0, _known)
        return {key: PLACEHOLDER if redacted[key] == MASK != item else with_placeholders(item, _known)
                for key, item in value.items()}
    return value


def placeholder_fields(data: Any, path: str = "") -> list[str]:
    """The dotted paths (`roles[0].env.HF_TOKEN`, `spec.tasks[0].prepareScript`) whose string holds PLACEHOLDER."""
    if isinstance(data, str):
        return [path or "(top level)"] if PLACEHOLDER in data else []
    if isinstance(data, list):
        return [found for index, item in enumerate(data) for found in placeholder_fields(item, f"{path}[{index}]")]
    if isinstance(data, Mapping):
        return [found for key, item in data.items()
                for found in placeholder_fields(item, f"{path}.{key}" if path else str(key))]
    return []
