"""No module-level mutable state (issue 32 item 3): what one context, screen or command keeps between calls is a
member of its owner (ClusterAccess, the app, a Reconciler's rounds), so a second context, a second app in the same
process or a test never sees the first one's reads, caches or flags.

The scan reads every module's AST: a name bound at module level to a mutable container — a dict, list or set
display or comprehension, or a call of dict, list, set, defaultdict, OrderedDict, deque, Counter,
WeakKeyDictionary, WeakValueDictionary, WeakSet, bytearray — and any `global` statement fail it. Immutable tables
(tuple, frozenset, MappingProxyType) and constants pass, and so does `__all__`; in the sandbox (LOOSE) a constant
table may be a plain container.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path
from types import MappingProxyType

import pytest

pytestmark = pytest.mark.xdist_group("source-scans")
"""The scans share each module's parsed tree and walk (`parsed`, `nodes`): on one xdist worker they parse the
sources once, 2 s of CPU, where spread over three workers each parsed them again (5.3-7.2 s of CPU in all)."""

ROOT = Path(__file__).resolve().parent.parent
STRICT = ("rlark_tui",)
"""Packages whose constant tables are immutable too."""
LOOSE = ("rlark_sandbox",)
"""Packages whose constant tables (UPPER_CASE names: API schemas and answers it serves as JSON) may be plain
dicts, lists and sets; any other name bound to a mutable container fails there too."""
MUTABLE_CALLS = frozenset({"dict", "list", "set", "defaultdict", "OrderedDict", "deque", "Counter", "ChainMap",
                           "WeakKeyDictionary", "WeakValueDictionary", "WeakSet", "bytearray"})
CONSTANT = re.compile(r"_?[A-Z][A-Z0-9_]*$")
"""A constant table's name (read, never written)."""
MUTABLE_DISPLAYS = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)


@functools.cache
def parsed(source: str) -> ast.Module:
    """A module's tree, parsed once for every scan of this file."""
    return ast.parse(source)


@functools.cache
def nodes(source: str) -> tuple[ast.AST, ...]:
    """Every node of a module's tree (ast.walk's order), walked once for every scan of this file."""
    return tuple(ast.walk(parsed(source)))


def _called(node: ast.expr) -> str:
    func = node.func if isinstance(node, ast.Call) else None
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _mutable(value: ast.expr | None) -> bool:
    if isinstance(value, MUTABLE_DISPLAYS):
        return True
    return isinstance(value, ast.Call) and _called(value) in MUTABLE_CALLS


def _names(node: ast.stmt) -> list[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return [name.id for target in targets for name in ast.walk(target) if isinstance(name, ast.Name)]


def _bound(body: list[ast.stmt]) -> list[tuple[int, str, ast.expr | None]]:
    """(line, name, value) of each binding in a module body, looking into if/try/with blocks at that level."""
    found: list[tuple[int, str, ast.expr | None]] = []
    for node in body:
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            found.extend((node.lineno, name, node.value) for name in _names(node) if name != "__all__")
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            inner = [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", []),
                     *(stmt for handler in getattr(node, "handlers", []) for stmt in handler.body)]
            found.extend(_bound(inner))
    return found


SHARED_CALLS = frozenset({"Lock", "RLock", "Event", "Condition", "Semaphore"})
"""Synchronisation objects: one made in a class body is shared by every instance (every app, every context)."""


def _class_state(source: str) -> list[tuple[int, str]]:
    """(line, Class.name) of each class attribute bound to a mutable container or a lock. Textual's class-level
    tables (BINDINGS, COMPONENT_CLASSES: UPPER_CASE, read and never written) pass."""
    found = []
    for cls in (node for node in nodes(source) if isinstance(node, ast.ClassDef)):
        for line, bound, value in _bound(cls.body):
            if _called(value) in SHARED_CALLS or (_mutable(value) and not CONSTANT.match(bound)):
                found.append((line, f"{cls.name}.{bound}"))
    return found


def violations(source: str, name: str, tables: bool = True) -> list[str]:
    """What the scan finds in one module; `tables=False` lets constant tables (UPPER_CASE names) be mutable."""
    found = [f"{name}:{line}: {bound}, a module-level mutable container" for line, bound, value in _bound(parsed(source).body)
             if _mutable(value) and (tables or not CONSTANT.match(bound))]
    found += [f"{name}:{line}: {bound}, state every instance shares" for line, bound in _class_state(source)]
    found += [f"{name}:{node.lineno}: global {', '.join(node.names)}" for node in nodes(source)
              if isinstance(node, ast.Global)]
    return found


def test_the_packages_keep_no_module_level_mutable_state():
    found = []
    for package in (*STRICT, *LOOSE):
        for path in sorted((ROOT / package).rglob("*.py")):
            found += violations(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)), package in STRICT)
    assert not found, "\n".join(found)


@pytest.mark.parametrize("source, kind", [
    ("_cache = {}", "_cache, a module-level"), ("_seen: set[str] = set()", "_seen, a module-level"),
    ("import weakref\n_by = weakref.WeakKeyDictionary()", "_by, a module-level"),
    ("from collections import defaultdict\n_n = defaultdict(int)", "_n, a module-level"),
    ("if True:\n    _late = []", "_late, a module-level"), ("TABLE = {'a': 1}", "TABLE, a module-level"),
    ("def f():\n    global _x\n    _x = 1", "global _x"),
    ("import threading\nclass A:\n    _lock = threading.Lock()", "A._lock, state every instance shares"),
    ("class A:\n    _seen = {}", "A._seen, state every instance shares"),
], ids=["dict", "set", "weak", "defaultdict", "nested", "table", "global", "class-lock", "class-dict"])
def test_the_scan_finds_each_kind(source, kind):
    assert any(kind in found for found in violations(source, "m.py"))


@pytest.mark.parametrize("source", [
    "TABLE = (1, 2)", "NAMES = frozenset({'a'})", "from types import MappingProxyType\nT = MappingProxyType({'a': 1})",
    "LIMIT = 4096", "__all__ = ['f']", "def f():\n    seen = {}\n    return seen", "class A:\n    def __init__(self):\n        self.x = {}",
    "class S:\n    BINDINGS = [('q', 'quit')]",
], ids=["tuple", "frozenset", "mapping-proxy", "constant", "all", "local", "member", "textual-table"])
def test_the_scan_passes_immutable_tables_and_members(source):
    assert violations(source, "m.py") == []


def test_a_loose_package_may_keep_constant_tables_but_no_state():
    assert violations("SCHEMA = {'a': 1}", "m.py", tables=False) == []
    assert violations("_seen = set()", "m.py", tables=False)


PARSERS = {"json": {"load", "loads"}, "orjson": {"loads"},
           "yaml": {"load", "safe_load", "full_load", "unsafe_load", "load_all", "safe_load_all"}}
"""The decoders whose unbounded reads (depth: RecursionError; aliases: a billion laughs; 4,300 digits) only
rlark_tui/text/parse.py may call (issue 33 item 3): every other module reads JSON and YAML through it."""
PARSE_MODULE = "rlark_tui/text/parse.py"


def raw_parses(source: str, name: str) -> list[str]:
    """Each call of a decoder of PARSERS (`json.loads(...)`, `yaml.safe_load(...)`) and each import of one
    (`from json import loads`) in one module."""
    found: list[str] = []
    if not any(module in source for module in PARSERS):
        return found
    for node in nodes(source):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) and node.func.attr in PARSERS.get(node.func.value.id, ()):
            found.append(f"{name}:{node.lineno}: {node.func.value.id}.{node.func.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module in PARSERS:
            found += [f"{name}:{node.lineno}: from {node.module} import {alias.name}" for alias in node.names
                      if alias.name in PARSERS[node.module]]
    return found


def test_json_and_yaml_are_parsed_only_by_text_parse():
    found = []
    for path in sorted((ROOT / "rlark_tui").rglob("*.py")):
        if str(path.relative_to(ROOT)) != PARSE_MODULE:
            found += raw_parses(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert not found, "parse with rlark_tui.text.parse (load_json, load_yaml):\n" + "\n".join(found)
    assert raw_parses("import json\njson.loads(x)", "m.py") == ["m.py:2: json.loads"]
    assert raw_parses("import yaml\nyaml.safe_load(x)\nyaml.dump(x)", "m.py") == ["m.py:2: yaml.safe_load"]
    assert raw_parses("from json import loads, dumps", "m.py") == ["m.py:1: from json import loads"]


def digit_tests(source: str, name: str) -> list[str]:
    """Each `.isdigit()` / `.isdecimal()` call in one module: `²` and `١` pass them, and int() of what passes may
    raise (a Unicode digit, or past Python's 4,300 digits)."""
    return [f"{name}:{node.lineno}: .{node.func.attr}()" for node in nodes(source)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("isdigit", "isdecimal")]


def test_numbers_are_read_only_by_text_parse():
    """Issue 33 item 3: numbers are read by total functions (text.parse.ascii_int, ascii_digits); a Pod name
    `p-²³`, a py-spy thread `ActorGroup:²`, a cgroup `usage_usec ²` or a pattern `a{²}` raised in int()."""
    found = []
    for path in sorted((ROOT / "rlark_tui").rglob("*.py")):
        if str(path.relative_to(ROOT)) != PARSE_MODULE:
            found += digit_tests(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert not found, "read numbers with rlark_tui.text.parse (ascii_int, ascii_digits):\n" + "\n".join(found)
    assert digit_tests("x.isdigit() and int(x)", "m.py") == ["m.py:1: .isdigit()"]


RAW_TERMINAL_WRITERS = MappingProxyType({
    "rlark_tui/local/fsutil.py": "a file the user named -, /dev/stdout or /dev/stderr: the bytes asked for (on a "
                                 "terminal text cleaned, binary refused)",
    "rlark_tui/local/terminal.py": "the one constant line saying the terminal is gone, to fd 2 (Textual holds "
                                   "sys.stderr while the TUI runs)",
    "rlark_tui/local/podshell.py": "the shell's first line, while the app is suspended: its names through "
                                   "sinks.one_line",
})
"""The modules that may write to the terminal past the cleaned streams (local/terminal.clean_streams), and why."""


RAW_WRITE_HINT = re.compile(r"os\.write\(|__std(?:out|err)__|\.buffer\.write")
"""Where a raw terminal write may be (only those modules are parsed)."""


def raw_terminal_writes(source: str, name: str) -> list[str]:
    """Each write in one module that passes the cleaned sys.stdout/sys.stderr: os.write to fd 1 or 2,
    sys.__stdout__ / sys.__stderr__, a stream's .buffer.write."""
    found: list[str] = []
    if not RAW_WRITE_HINT.search(source):
        return found
    for node in nodes(source):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "write" \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "os" and node.args \
                and isinstance(node.args[0], ast.Constant) and node.args[0].value in (1, 2):
            found.append(f"{name}:{node.lineno}: os.write({node.args[0].value}, ...)")
        elif isinstance(node, ast.Attribute) and node.attr in ("__stdout__", "__stderr__"):
            found.append(f"{name}:{node.lineno}: sys.{node.attr}")
        elif isinstance(node, ast.Attribute) and node.attr == "write" and isinstance(node.value, ast.Attribute) \
                and node.value.attr == "buffer":
            found.append(f"{name}:{node.lineno}: .buffer.write")
    return sorted(found)


def test_the_terminal_is_written_only_through_the_cleaned_streams():
    """Issue 33 item 4 (a third round checks the claim): every command's print goes through clean_streams'
    cleaned sys.stdout and sys.stderr, the TUI through its widgets; no module writes to the terminal past them
    but those listed, each for its reason."""
    found = []
    for path in sorted((ROOT / "rlark_tui").rglob("*.py")):
        name = str(path.relative_to(ROOT))
        if name not in RAW_TERMINAL_WRITERS:
            found += raw_terminal_writes(path.read_text(encoding="utf-8"), name)
    assert not found, "write through sys.stdout / sys.stderr (cleaned), not past them:\n" + "\n".join(found)
    assert raw_terminal_writes("os.write(1, b)\nsys.__stderr__.write(x)\nsys.stdout.buffer.write(b)", "m.py") == [
        "m.py:1: os.write(1, ...)", "m.py:2: sys.__stderr__", "m.py:3: .buffer.write"]


MARKUP_WIDGETS = frozenset({"Static", "Label", "Button", "Checkbox", "RadioButton", "Collapsible", "TabPane", "Tab"})
"""Textual widgets that read a str they are given as markup unless told `markup=False`."""
PROMPT_WIDGETS = frozenset({"Option", "Selection", "DiscoveryHit"})
"""Textual's list entries, whose str prompt is markup whatever the list says."""
PLAIN_MAKERS = frozenset({"Text", "Content", "assemble", "styled"})
"""Calls that hand Textual text it does not parse (rich's Text, Textual's Content)."""


UPDATED_WIDGETS = frozenset({"Static", "Label"})
"""Markup widgets whose text is replaced later (`update`), as parsed as the text they were made with."""


def markup_widgets(sources: list[str]) -> tuple[frozenset[str], frozenset[str]]:
    """(MARKUP_WIDGETS, UPDATED_WIDGETS) with the project's subclasses of each, but those whose __init__ gives
    `markup=False` to its base (a subclass of Static is a Static a scan of 'Static(' does not see)."""
    classes = [node for source in sources if "textual" in source for node in nodes(source)
               if isinstance(node, ast.ClassDef)]
    markup, updated = set(MARKUP_WIDGETS), set(UPDATED_WIDGETS)
    while True:
        more = {node.name for node in classes if node.name not in markup and not _plain_init(node)
                and any(ast.unparse(base).split(".")[-1] in markup for base in node.bases)}
        if not more:
            return frozenset(markup), frozenset(updated | {node.name for node in classes if node.name in more and any(
                ast.unparse(base).split(".")[-1] in updated for base in node.bases)})
        markup |= more
        updated |= {node.name for node in classes if node.name in more and any(
            ast.unparse(base).split(".")[-1] in updated for base in node.bases)}


def _plain_init(node: ast.ClassDef) -> bool:
    """Whether a widget class's __init__ gives its base `markup=False`."""
    return any(isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "__init__"
               and any(k.arg == "markup" and isinstance(k.value, ast.Constant) and k.value.value is False
                       for k in call.keywords)
               for item in node.body if isinstance(item, ast.FunctionDef) and item.name == "__init__"
               for call in ast.walk(item))


QUERIES = frozenset({"query", "query_one", "query_exactly_one", "query_children", "query_ancestor",
                     "walk_children", "get_child_by_type"})
"""DOM lookups that may be given a widget type (or a type selector) to find a widget by."""


def found_by_type(sources: list[str], updated: frozenset[str]) -> frozenset[str]:
    """The updated widgets a lookup finds by type (`query_one(Static)`, `query('Label')`), with their subclasses
    (Label is a Static; so is a project subclass): such a widget needs no id or name to be updated later."""
    classes = [node for source in sources if "textual" in source for node in nodes(source)
               if isinstance(node, ast.ClassDef)]
    named: set[str] = set()
    for source in sources:  # the text of each lookup's arguments (a walk of every tree again took a second)
        for args in re.findall(rf"\.(?:{'|'.join(QUERIES)})\(([^()]*)\)", source):
            for arg in args.split(","):
                arg = arg.strip()
                if arg[:1] in "'\"":  # a selector's type names
                    named |= set(re.findall(r"(?<![#.\w-])([A-Z]\w*)", arg))
                else:
                    named.add(arg.split(".")[-1])
    found = named & (updated | {"Widget"})
    found |= {"Label"} if found & {"Static", "Widget"} else set()
    while True:
        more = {node.name for node in classes if node.name in updated and node.name not in found and (
            "Widget" in found or any(ast.unparse(base).split(".")[-1] in found for base in node.bases))}
        if not more:
            return frozenset(found & updated)
        found |= more


def markup_reads(source: str, name: str, widgets: tuple[frozenset[str], frozenset[str]] = (
        MARKUP_WIDGETS, UPDATED_WIDGETS), by_type: frozenset[str] = frozenset()) -> list[str]:
    """Each Textual widget or list entry built in one module from a str that is not a literal (text from
    elsewhere: a Job's, a log's, a server's) without `markup=False` or a Text/Content around it; and each Static
    or Label that parses markup and can be found to be `update`d (it has an id or classes, or is kept in a name),
    or a project's subclass of them (`widgets`) that parses markup (its own methods update it): what update()
    gives it later is parsed as markup too; so is one of a type a lookup finds by type (`by_type`)."""
    marked, updated = widgets
    textual = {alias.asname or alias.name for node in nodes(source) if isinstance(node, ast.ImportFrom)
               and (node.module or "").startswith("textual") for alias in node.names} | marked - MARKUP_WIDGETS
    kept = {id(node.value) for node in nodes(source) if isinstance(node, ast.Assign | ast.AnnAssign | ast.NamedExpr)}

    def plain(node: ast.expr) -> bool:  # an empty literal is a placeholder: what is put there later is not
        if isinstance(node, ast.Constant):
            return node.value != ""
        func = node.func if isinstance(node, ast.Call) else None
        return func is not None and (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")) \
            in PLAIN_MAKERS

    found: list[str] = []
    for node in nodes(source):
        if not isinstance(node, ast.Call):
            continue
        called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if called not in textual or called not in marked | PROMPT_WIDGETS:
            continue
        markup = next((k.value for k in node.keywords if k.arg == "markup"), None)
        parses = called in PROMPT_WIDGETS or not (isinstance(markup, ast.Constant) and markup.value is False)
        findable = called in updated and (called not in UPDATED_WIDGETS or id(node) in kept  # a subclass updates
                                          or called in by_type  # itself too
                                          or any(k.arg in ("id", "classes") for k in node.keywords))
        if parses and (findable or not (node.args and plain(node.args[0]))):
            found.append(f"{name}:{node.lineno}: {called}({ast.unparse(node.args[0])[:60] if node.args else ''})")
    return found


def test_no_widget_reads_text_from_elsewhere_as_markup():
    """Issue 33 item 4 (a fifth round found five list entries that did): a Job name, a TensorBoard tag, a
    namespace or a draft's role given to Textual as a str is markup, where `[@click=app.quit]` is an action and
    `[b]` restyles the screen. Every widget and list entry made from text that is not a literal, or made empty to
    be filled later (`update`), says `markup=False` or is given a Text/Content; so does a Static or Label made from
    a literal that can be found and updated (a seventh round: an id, classes or a name), and the project's own
    subclasses of them are scanned as they are."""
    paths = sorted((ROOT / "rlark_tui").rglob("*.py"))
    sources = [path.read_text(encoding="utf-8") for path in paths]
    widgets = markup_widgets(sources)
    by_type = found_by_type(sources, widgets[1])
    found = []
    for path, source in zip(paths, sources):
        found += markup_reads(source, str(path.relative_to(ROOT)), widgets, by_type)
    assert not found, "give Textual Text/Content or markup=False:\n" + "\n".join(found)
    sample = ("from textual.widgets import Static, Label\nfrom textual.widgets.option_list import Option\n"
              "Static(name)\nStatic(name, markup=False)\nStatic('Help')\nLabel(Text(name))\nOption(f'{job}')\n"
              "Static('', id='later')\nStatic(id='later')\nStatic('Loading', id='status')\nw = Label('Loading')\n"
              "Section('', id='x')\nPlain('', id='y')\nSection('Title')\n")
    project = markup_widgets(["from textual.widgets import Static\nclass Section(Static): pass\n"
                              "class Plain(Static):\n    def __init__(self, t):\n"
                              "        super().__init__(t, markup=False)\n"])
    assert project == (MARKUP_WIDGETS | {"Section"}, UPDATED_WIDGETS | {"Section"})
    assert markup_reads(sample, "m.py", project) == [
        "m.py:3: Static(name)", "m.py:7: Option(f'{job}')", "m.py:8: Static('')", "m.py:9: Static()",
        "m.py:10: Static('Loading')", "m.py:11: Label('Loading')", "m.py:12: Section('')", "m.py:14: Section('Title')"]
    looked_up = ["from textual.widgets import Static\nclass Box(Static): pass\nclass Page(Screen):\n    def compose(self):\n"
                 "        yield Label('Loading')\n        yield Box('Loading')\n"
                 "    def show(self, name):\n        self.query_one(Static).update(name)\n"]
    assert found_by_type(looked_up, UPDATED_WIDGETS | {"Box"}) == {"Static", "Label", "Box"}
    assert found_by_type(["self.query('Screen Label.x')\nself.query_one('#Static', Static)"],
                         UPDATED_WIDGETS) == {"Static", "Label"}
    assert found_by_type(["self.query_one('#status')\nself.query(LiveTable)"], UPDATED_WIDGETS) == set()
    assert markup_reads("from textual.widgets import Label\nLabel('Loading')\nLabel('Help', markup=False)\n", "m.py",
                        by_type=frozenset({"Label"})) == ["m.py:2: Label('Loading')"]


TEXT_SINKS = MappingProxyType({
    # call (a widget, or a method of one): (positions of text arguments, "*" every one; keywords; options?)
    "add_row": ("*", ("label",), False), "add_rows": ((0,), (), False), "add_column": ((0,), (), False),
    "add_columns": ("*", (), False), "update_cell": ((2,), ("value",), False), "update_cell_at": ((1,), ("value",), False),
    "Select": ((0,), ("options",), True), "set_options": ((0,), (), True), "from_values": ((0,), (), False),
    "OptionList": ("*", (), True), "SelectionList": ("*", (), True), "add_option": ((0,), (), True),
    "add_options": ((0,), (), True), "Tabs": ("*", (), False), "TabbedContent": ("*", (), False),
    "Tree": ((0,), ("label",), False), "add": ((0,), ("label",), False), "add_leaf": ((0,), ("label",), False),
    "set_label": ((0,), (), False), "Hit": ((1,), ("match_display", "help"), False),
    "DiscoveryHit": ((0,), ("display", "help"), False), "Collapsible": ((), ("title",), False),
})
"""Textual calls that read a str they are given as markup, whatever the widget says: DataTable cells, labels and
headers (Text.from_markup), Select, OptionList and SelectionList prompts (an option list's markup is on by
default), Tabs and TabbedContent labels, Tree labels, the command palette's hits, a Collapsible's title. For a
list of options, the first item of each (prompt, value) pair is the text."""
TEXT_ATTRIBUTES = frozenset({"border_title", "border_subtitle", "tooltip", "label"})
"""Widget attributes Textual reads as markup when set to a str (a Button's or Checkbox's label too)."""
TREE_NAMES = frozenset({"Tree", "TreeNode"})
"""`add` is a tree node's only where the module uses a Tree (else it is a set's)."""


def markup_sinks(source: str, name: str) -> list[str]:
    """Each call of TEXT_SINKS and each TEXT_ATTRIBUTES assignment, in a module that uses Textual, given text that
    is not a literal, a constant table, or made by Text, Content, escape (the palette's help, rlark's own words: no
    escaping makes cluster text plain to Textual's markup, `[ @click=app.quit]` stays an action) or a function of the
    module that returns Text or Content."""
    if "textual" not in source:
        return []
    textual = {alias.asname or alias.name for node in nodes(source) if isinstance(node, ast.ImportFrom)
               and (node.module or "").startswith("textual") for alias in node.names}
    if not textual:
        return []
    makers = set(PLAIN_MAKERS) | {"escape", "Option", "Selection"} | {
        node.name for node in nodes(source) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.returns is not None and ast.unparse(node.returns).split("[")[0] in ("Text", "Content")}

    def called(node: ast.expr) -> str:
        func = node.func if isinstance(node, ast.Call) else None
        return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")

    def plain(node: ast.expr, options: bool = False) -> bool:
        if isinstance(node, ast.Constant):
            return node.value != ""
        if isinstance(node, ast.Name):
            return bool(CONSTANT.match(node.id))
        if isinstance(node, ast.Starred):
            return plain(node.value, options)
        if isinstance(node, ast.IfExp):
            return plain(node.body, options) and plain(node.orelse, options)
        if isinstance(node, ast.BoolOp):
            return all(plain(value, options) for value in node.values)
        if isinstance(node, ast.Tuple | ast.List) and options:
            return not node.elts or plain(node.elts[0])
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return all(plain(element, options) for element in node.elts)
        if isinstance(node, ast.ListComp | ast.GeneratorExp | ast.SetComp):
            return plain(node.elt, options)
        if isinstance(node, ast.Call) and called(node) in ("map",) and node.args:
            return isinstance(node.args[0], ast.Name) and node.args[0].id in makers
        if isinstance(node, ast.Call) and called(node) in ("tuple", "list") and node.args:
            return plain(node.args[0], options)
        return isinstance(node, ast.Call) and called(node) in makers

    found: list[str] = []
    for node in nodes(source):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Attribute) and target.attr in TEXT_ATTRIBUTES and not plain(node.value):
                    found.append(f"{name}:{node.lineno}: .{target.attr} = {ast.unparse(node.value)[:60]}")
            continue
        what = called(node)
        if what not in TEXT_SINKS or (what == "add" and not textual & TREE_NAMES) or (
                isinstance(node.func, ast.Name) and what not in textual):  # type: ignore[union-attr]
            continue
        positions, keywords, options = TEXT_SINKS[what]
        args = node.args if positions == "*" else [node.args[i] for i in positions if i < len(node.args)]
        args += [k.value for k in node.keywords if k.arg in keywords]
        for arg in args:
            if not plain(arg, options):
                found.append(f"{name}:{node.lineno}: {what}({ast.unparse(arg)[:60]})")
    return sorted(found, key=lambda line: int(line.split(":")[1]))


def test_no_list_table_tree_or_title_reads_text_from_elsewhere_as_markup():
    """Issue 33 item 4, a sixth round: the widget scan above held widgets and list entries, not the other calls
    Textual reads a str as markup in: a DataTable's cells, a Select's, OptionList's or SelectionList's prompts, a
    Tree's labels, tab labels, the command palette's hits, border titles and tooltips. Each is given a literal,
    a constant table, or Text/Content."""
    found = []
    for path in sorted((ROOT / "rlark_tui").rglob("*.py")):
        found += markup_sinks(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert not found, "give Textual Text/Content:\n" + "\n".join(found)
    sample = ("from textual.widgets import DataTable, Select, Tree\n"
              "t.add_row(*map(Text, cells))\nt.add_row(*cells)\nSelect([(Text(n), n) for n in names])\n"
              "Select([(n, n) for n in names])\ns.set_options(OPTIONS)\nw.border_title = f'{job}'\n"
              "node.add(name)\nnode.add_leaf(Text(name))\nt.add_columns('a', 'b')\n")
    assert markup_sinks(sample, "m.py") == ["m.py:3: add_row(*cells)", "m.py:5: Select([(n, n) for n in names])",
                                            "m.py:7: .border_title = f'{job}'", "m.py:8: add(name)"]


ARCHIVE_MODULE = "rlark_tui/local/archives.py"


def tar_reads(source: str, name: str) -> list[str]:
    """Each `tarfile.open(...)` or `TarFile(...)` in one module that does not write (its mode not a literal 'w...')."""
    found: list[str] = []
    if "tarfile" not in source:
        return found
    for node in nodes(source):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("open", "TarFile") \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "tarfile":
            mode = next((k.value for k in node.keywords if k.arg == "mode"), node.args[1] if len(node.args) > 1 else None)
            if not (isinstance(mode, ast.Constant) and str(mode.value).startswith(("w", "x"))):
                found.append(f"{name}:{node.lineno}: tarfile.{node.func.attr}")
    return found


def test_tar_archives_are_read_only_by_local_archives():
    """Issue 33 item 2, a sixth round: tarfile reads a PAX header or long name whole, whatever size it claims (510 KB
    of gzip held 512 MiB), expands a sparse file's holes, and lets a cut gzip stream's EOFError through; every
    archive rlark reads (a Pod's tar, a bundle) is opened by local.archives.open_tar."""
    found = []
    for path in sorted((ROOT / "rlark_tui").rglob("*.py")):
        if str(path.relative_to(ROOT)) != ARCHIVE_MODULE:
            found += tar_reads(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert not found, "read an archive with rlark_tui.local.archives.open_tar:\n" + "\n".join(found)
    assert tar_reads("tarfile.open(fileobj=f, mode='r:gz')\ntarfile.open(fileobj=f, mode='w|gz')\ntarfile.open(p)",
                     "m.py") == ["m.py:1: tarfile.open", "m.py:3: tarfile.open"]


def test_rlarks_own_python_children_are_started_by_local_selfrun():
    """Issue 33, an eleventh round, as a second local user: `python -m` puts the working directory first on the
    child's sys.path, so the status refresher ran another uid's package `rlark_tui` planted in a shared directory.
    Every child running rlark's interpreter is started by local.selfrun.python_module (-P)."""
    found = []
    for path in sorted((ROOT / "rlark_tui").rglob("*.py")):
        relative = str(path.relative_to(ROOT))
        if relative != "rlark_tui/local/selfrun.py":
            found += [f"{relative}:{number}" for number, line in enumerate(path.read_text(encoding="utf-8")
                                                                           .splitlines(), start=1)
                      if "sys.executable" in line]
    assert not found, "start rlark's own Python children with local.selfrun.python_module:\n" + "\n".join(found)
    sandbox = [f"{path.relative_to(ROOT)}:{number}" for path in sorted((ROOT / "rlark_sandbox").rglob("*.py"))
               for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
               if re.search(r"sys\.executable, \"-m\"", line)]
    assert not sandbox, "the sandbox's `python -m` children take -P (rlark demo runs in any directory):\n" + \
        "\n".join(sandbox)


SHELL_QUOTERS = frozenset({"shell_line", "shell_word"})
_COMMAND_BEFORE = re.compile(r"(?:^|[\s`(;])rlark ([a-z][a-z-]*)(?: [a-z][a-z-]*)* $")


def unquoted_command_words(source: str, name: str, commands: frozenset[str]) -> list[str]:
    """Each word an f-string puts after `rlark COMMAND ...` (a command line rlark prints, a hint) other than a call of
    text.sinks.shell_line or shell_word."""
    found = []
    for node in nodes(source):
        if not isinstance(node, ast.JoinedStr):
            continue
        for before, value in zip(node.values, node.values[1:], strict=False):
            match = isinstance(before, ast.Constant) and isinstance(value, ast.FormattedValue) \
                and _COMMAND_BEFORE.search(str(before.value))
            if match and match.group(1) in commands and not (
                    isinstance(value.value, ast.Call) and _called(value.value) in SHELL_QUOTERS):
                found.append(f"{name}:{value.lineno}: rlark {match.group(1)} {{{ast.unparse(value.value)}}}")
    return found


def test_a_command_line_rlark_prints_quotes_every_word_it_names():
    """Issue 33 item 4, a twenty-third round (shell lines rlark prints): a hint named a Job as the control plane
    answered it, `rlark clone x$(touch /tmp/p)`, run as typed when pasted; every word goes through sinks.shell_line."""
    from rlark_tui.cli import build_parser

    subparsers = next(action for action in build_parser()._actions if action.dest == "command")
    commands = frozenset(subparsers.choices)
    found = []
    for path in sorted((ROOT / "rlark_tui").rglob("*.py")):
        found += unquoted_command_words(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)), commands)
    assert not found, "quote the words of a command line with text.sinks.shell_line:\n" + "\n".join(found)
    assert unquoted_command_words('f"see `rlark clone {name}`, rlark cannot {x}"\nf"rlark get jobs {shell_line([n])}"',
                                  "m.py", commands) == ["m.py:1: rlark clone {name}"]
