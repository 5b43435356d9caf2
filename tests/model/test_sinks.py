"""One escaper per sink (issue 33 items 4-6): hostile cluster text reaches no sink as a mention, a link,
a second line, a second shell command, or an unmasked secret; a 50,000-deep value redacts."""

from __future__ import annotations

import ast
import base64
import json
import re
import shlex
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

import rlark_tui
from rlark_tui.commands.describe import describe_text
from rlark_tui.local import hooks
from rlark_tui.telemetry import bundle
from rlark_tui.text import redact, sanitize, sinks
from rlark_tui.view.index import ssh_jump_command

FORGED = "ppo\nStatus:         Succeeded (phase Succeeded)\u202e"


def test_one_line_fields_keep_no_break_and_no_bidi():
    shown = sinks.one_line(FORGED + "\r\t\u2028\u2066")
    assert "\n" not in shown and "\r" not in shown and "\u202e" not in shown and "\u2028" not in shown
    assert shown.startswith("ppo\\nStatus:") and "\\u202e" in shown


def test_a_submitted_spec_holding_a_lone_surrogate_is_described_as_not_intact():
    """Issue 33, a fifteenth round (a Job's annotation as a hostile control plane or the Job's author wrote it):
    the submitted spec is JSON text, which may escape a lone surrogate ('\\ud800'), and its sha256 encoded it
    strictly: rlark describe, and rlark check's evidence of the submitted YAML, ended in a crash report
    (UnicodeEncodeError). It is taken as it is, and such a spec is not the one whose sha256 was recorded."""
    from rlark_tui.model.submission import SUBMITTED_SPEC_ANNOTATION, SUBMITTED_SPEC_SHA256_ANNOTATION

    raw = {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job",
           "metadata": {"name": "ppo", "annotations": {SUBMITTED_SPEC_ANNOTATION: '{"tasks": [], "x": "\\ud800"}',
                                                       SUBMITTED_SPEC_SHA256_ANNOTATION: "0" * 64}},
           "spec": {"tasks": []}, "status": {"phase": "Running"}}
    page = describe_text(raw, [], [], {}, None, now=datetime(2026, 12, 1, tzinfo=UTC))
    assert "Submitted spec: sha256 0000000000000000… record damaged (hash mismatch)" in page.splitlines()


def test_describe_shows_a_forged_display_name_on_its_own_line():
    raw = {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job",
           "metadata": {"name": "ppo", "annotations": {"rlark.io/display-name": FORGED}},
           "spec": {"tasks": [{"name": "actor\nStatus: Succeeded", "image": "img\nEnv: X=1", "replicas": 1}]},
           "status": {"phase": "Failed"}}
    page = describe_text(raw, [], [], {}, None, now=datetime(2026, 12, 1, tzinfo=UTC))
    starts = [line for line in page.splitlines() if line.lstrip().startswith("Status")]
    assert len(starts) == 1 and "Failed" in starts[0]
    assert not any(line.lstrip().startswith("Env:") for line in page.splitlines())


def test_describe_says_why_ray_is_unavailable_on_one_line():
    """Issue 33, a fifteenth round: `rlark describe job`'s Ray section printed why Ray could not be read as it came,
    and the reason quotes a Job author's role name (`Task <job>-<role> does not exist yet`) or a Ray head's
    answer, so a line break in either printed lines of its own ('Status: Succeeded') under the page's."""
    raw = {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job", "metadata": {"name": "ppo"},
           "spec": {"tasks": [{"name": "actor", "head": True, "replicas": 1}]}, "status": {"phase": "Failed"}}
    for ray in ({"error": f"ray: Task {FORGED} does not exist yet"},
                {"error": None, "alive_nodes": 1, "expected": 1, "source": "dashboard", "jobs": [],
                 "jobs_error": f"HTTP 500: {FORGED}"}):
        page = describe_text(raw, [], [], {}, ray, now=datetime(2026, 12, 1, tzinfo=UTC))
        starts = [line for line in page.splitlines() if line.lstrip().startswith("Status")]
        assert len(starts) == 1 and "Failed" in starts[0] and "\u202e" not in page, page
        assert page.splitlines()[-1].endswith("ppo\\nStatus:         Succeeded (phase Succeeded)\\u202e"
                                              + (" does not exist yet" if ray["error"] else "")), page


def test_get_o_name_prints_one_line_per_object_whatever_its_name():
    """`rlark get jobs -o name` (a script's loop over the lines) printed a hostile control plane's name as it came:
    `evil\nStatus: Succeeded` was two lines, the second a name no object has."""
    from rlark_tui.cluster.kinds import JOBS
    from rlark_tui.cluster.output import render_objects

    shown = render_objects(JOBS, [{"metadata": {"name": FORGED}}, {"metadata": {"name": "good-job"}}], "name")
    assert shown.splitlines() == ["job.rlinf.io/good-job", "job.rlinf.io/" + sinks.one_line(FORGED)]


def test_a_desktop_notification_holds_no_control_break_or_field_separator():
    """Issue 33 item 4, a sixth round: with `alerts.notify: true` the TUI writes OSC 9 and OSC 777 with the alert's
    Job name, taken raw from the control plane (only `;` made `,`): a name holding `ESC c` reset the operator's
    terminal and `ESC [ 2 J` cleared it from inside the notification (an ESC ends the OSC string and starts a
    sequence of its own), a BEL ended the notification early, a line break split it."""
    hostile = "evil\x1bc\x1b[2J\x1b]52;c;SGVsbG8=\x07\x9c\nPhase: ok\u202e" + "z" * 300
    shown = sinks.notification(f"rlark: {hostile} job-failed")
    assert shown.startswith("rlark: evil\\nPhase: ok\\u202ezz")
    assert shown.isprintable() and ";" not in shown and len(shown) == sinks.NOTIFICATION_CHARS


def test_chat_text_holds_no_mention_and_no_link():
    hostile = ('crash <!channel> <@U123> <http://evil.example|click> & <at user_id="all">all</at> @all '
               "[docs](https://evil.example/x)")
    slack = hooks.payload({}, hostile, "slack")["text"]
    assert "<" not in slack and ">" not in slack and "&lt;!channel&gt;" in slack and "&amp;" in slack
    for fmt, body in (("feishu", hooks.payload({}, hostile, "feishu")["content"]["text"]),
                      ("dingtalk", hooks.payload({}, hostile, "dingtalk")["text"]["content"])):
        assert "<at" not in body and "@all" not in body and "<" not in body, fmt
    for body in (slack, hooks.payload({}, hostile, "feishu")["content"]["text"]):
        assert "://" not in body and "](" not in body
    assert hooks.payload({"message": hostile}, hostile, "json") == {"message": hostile}


def test_chat_text_holds_no_bare_domain_a_client_would_link():
    hostile = "crash: see www.evil.example/login, evil.com or пример.рф (mail ops@evil.io); train.py v1.2.3 10.0.0.1"
    for fmt in sinks.FORMATS:
        body = sinks.chat(hostile, fmt)
        assert not re.search(r"\w\.[^\W\d_]", body), (fmt, body)
        assert "www[.]evil[.]example/login" in body and "пример[.]рф" in body and "v1.2.3 10.0.0.1" in body


def test_chat_text_holds_no_domain_of_ideographic_or_full_width_dots():
    """Issue 33, left open by the sixteenth round: IDNA (RFC 3490 3.1, UTS #46: what a browser does to a host) reads
    the ideographic, full-width and half-width ideographic full stops as dots, so 'evil。com' or 'www．evil｡com' in
    an alert, linked by a chat client, opens evil.com; they were posted as they were. Chinese prose keeps its '。'."""
    hostile = "crash: see evil\u3002com, www\uff0eevil\uff61com/login, 失败evil\u3002io。任务失败。请检查 train\uff0epy"
    for fmt in sinks.FORMATS:
        body = sinks.chat(hostile, fmt)
        assert not re.search(r"[A-Za-z0-9][.\u3002\uff0e\uff61][A-Za-z]", body), (fmt, body)
        assert "evil[\u3002]com" in body and "www[\uff0e]evil[\uff61]com/login" in body and "失败evil[\u3002]io。" in body
        assert "任务失败。请检查" in body


def test_chat_text_holds_no_link_whatever_comes_before_or_inside_a_domain():
    """Issue 33, a twenty-third round (webhook bodies by generated text, linkify-it as a chat client's autolinker): a
    domain was defanged only when a word character began it, so `~.evil.com`, `\u200b.io`, `xn--p1ai`.io` and, once
    Feishu's `<` was full-width, `x＜.evil.com` were posted as they were and linked, and so was `mailto:`; a soft
    hyphen or a full-width label (`evil.\xadcom`, `evil。ｃｏｍ`), which IDNA reads as evil.com, kept its dot."""
    from linkify_it import LinkifyIt

    linkify = LinkifyIt()
    linked = ["~.evil.com/login", "see \u200b.io", "{\xad.рф", "xn--p1ai`.io", "mailto:ops@x", "+~.evil.com。/&"]
    assert all(linkify.match(text) for text in linked)  # as written, each is a link
    for fmt in sinks.FORMATS:
        for text in [*linked, "x<.evil.com"]:
            body = sinks.chat(text, fmt)
            assert not linkify.match(body), (fmt, text, body)
        assert sinks.chat("go evil.\xadcom, evil。ｃｏｍ", fmt) == "go evil[.]\xadcom, evil[。]ｃｏｍ"


def _bash_words(line: str) -> list[str]:
    """The words bash makes of `line`."""
    import subprocess

    done = subprocess.run(["bash", "-c", f"printf '%s\\0' {line}"], capture_output=True, check=True, timeout=10)
    return done.stdout.decode("utf-8", "surrogateescape").split("\0")[:-1]


def test_shell_lines_are_quoted():
    line = ssh_jump_command({"sshJumpHost": "jump.example\ntouch /tmp/pwned; x", "sshJumpPort": "22"}, "p-0", "me")
    assert _bash_words(line) == ["ssh", "-J", "me@jump.example\ntouch /tmp/pwned; x:22", "root@p-0"]
    assert sinks.shell_line(["a b", "$(x)"]) == "'a b' '$(x)'"


def test_a_shell_line_holds_no_control_a_paste_would_act_on():
    # issue 33, an eleventh round: the J key's ssh -J line quoted the gateway's jump host and the Pod's name with
    # shlex.quote, which keeps a control as it is, so a jump host 'x ESC[201~ ^U touch /tmp/pwned' reached the
    # clipboard raw: pasted into bash, ESC[201~ ended its bracketed paste, ^U erased the line and the rest was typed
    # as a command (checked in a pty with bash 5.2). A word with a character that is not printable is written in
    # bash's $'...' quoting, every such character as its escape
    words = ["ssh", "-J", "me@x\x1b[201~\x15touch /tmp/pwned\n\r\x7f\x9b", "root@p\u202e-0\u2028\u200b", "it's",
             "a\\b", "$(x) `y`", "é"]
    line = ssh_jump_command({"sshJumpHost": words[2][3:]}, words[3][5:], "me")
    for shown in (line, sinks.shell_line(words)):
        assert shown.isprintable() and "\x1b" not in shown, shown
    assert _bash_words(sinks.shell_line(words)) == words
    assert _bash_words(line) == words[:4]



def test_a_hint_naming_a_job_gives_back_its_name_when_pasted():
    """Issue 33, a twenty-third round (shell lines rlark prints, by generated names): a Finished Job's refusal said
    `rlark clone NAME` with the name as the control plane answered it, so `x$(touch /tmp/pwned)` ran when pasted."""
    from rlark_tui.model.lifecycle import finished_refusal

    for name in ("x$(touch /tmp/pwned)", "a b; rm -rf ~", "it's `id`", "n\n2\x1b[201~", "-rf", "ok-1"):
        said = finished_refusal(name, "Failed")
        hint = said.partition("start a copy with `")[2].removesuffix("`")
        assert _bash_words(hint) == ["rlark", "clone", *(["--"] if name.startswith("-") else []), name], said


def _hint_calls() -> list[tuple[str, ast.Call]]:
    """Every shell_line call of rlark_tui whose command is a literal list starting with 'rlark' (only a module whose
    text names shell_line can hold one: a dozen of some 200 are parsed)."""
    found = []
    for path in sorted(Path(rlark_tui.__file__).parent.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)) if "shell_line" in text else ():
            if (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "shell_line"
                    and node.args and isinstance(node.args[0], ast.List) and node.args[0].elts
                    and isinstance(node.args[0].elts[0], ast.Constant) and node.args[0].elts[0].value == "rlark"):
                found.append((f"{path.name}:{node.lineno}", node))
    return found


def _with(node: ast.expr, name: str) -> tuple[str, bool]:
    """A word of a hint with every value from outside made `name`, and whether it holds one."""
    if isinstance(node, ast.Constant):
        return node.value, False
    if isinstance(node, ast.JoinedStr):
        return "".join(part.value if isinstance(part, ast.Constant) else name for part in node.values), True
    return name, True


def test_every_hint_parses_back_to_the_name_it_gives_whatever_it_starts_with():
    """Issue 33, a twenty-fourth round (shell lines rlark prints, by Job names from a hostile control plane): a hint
    naming a Job called `-rf` printed `rlark clone -rf`, which rlark's parser reads as options (`-r`: no such
    option; `--help` for a Job called --help), and edit's `--name -x` took no value. Each rlark hint's words from
    outside (every call of shell_line, found in the source) are given hostile names, and shlex.split of the hint
    and rlark's own parser give back every one."""
    from rlark_tui.cli import build_parser

    calls = _hint_calls()
    assert len(calls) >= 13, [where for where, _ in calls]
    parser = build_parser()
    for where, call in calls:
        if where.startswith("top.py:"):
            continue  # `rlark top WHAT takes no name`: WHAT is one of top's choices, which the parser took
        for name in ("-rf", "--help", "-", "-o=yaml", "ok-1", "a b"):
            groups = [[_with(word, name) for word in group.elts] for group in call.args if isinstance(group, ast.List)]
            hint = sinks.shell_line(*([word for word, _ in group] for group in groups))
            parsed = vars(parser.parse_args(shlex.split(hint)[1:]))
            values = [v for value in parsed.values() for v in (value if isinstance(value, list) else [value])]
            for word in (word for group in groups for word, outside in group if outside):
                assert word in values or word.partition("=")[2] in values, (where, hint, parsed)


def test_file_names_from_cluster_names():
    assert sinks.file_name("../../.bashrc") == "_.._.bashrc"
    assert sinks.file_name("..") == "_" and sinks.file_name("") == "_" and sinks.file_name("ppo-1.log") == "ppo-1.log"
    assert len(sinks.file_name("x" * 500)) == sinks.FILE_CHARS and "/" not in sinks.file_name("a/b\n")


def test_long_cluster_names_that_differ_past_the_bound_name_different_files():
    """Issue 33, a ninth round, a Job author's long names: a name was cut at FILE_CHARS, so the Pods of a Job whose
    name is 95 characters long (a Kubernetes name may have 253) all had one member name in `rlark bundle`
    (`logs/<first 100 characters>/main.log`), and `rlark --bundle` showed one rank's log as every rank's; so did
    two such Jobs' kept diagnoses and check records. A cut name ends in a digest of the whole name."""
    job = "j" * 95
    pods = [f"{job}-actor-{rank}" for rank in range(3)]
    members = {bundle.log_member("c", "n", pod, "main") for pod in pods} | {bundle.pod_member("c", "n", pod)
                                                                           for pod in pods}
    assert len(members) == 6 and all(len(part) <= sinks.FILE_CHARS for m in members for part in m.split("/"))
    assert sinks.file_name(pods[0]).startswith(job[:80]) and sinks.file_name(pods[0]) == sinks.file_name(pods[0])
    assert sinks.file_name("ppo-1.log") == "ppo-1.log" and sinks.file_name("x" * 100) == "x" * 100


def test_cluster_object_names_name_files_apart_even_on_a_case_insensitive_file_system():
    """Issue 33, a fifteenth round (left-over item B): the files rlark names after a Job (kept first failures,
    check records, submitted and edited specs, saved logs, bundles) took file_name of its name, which keeps case and
    makes `a/b` and `a_b` alike: on a case-insensitive file system (macOS, Windows) Jobs 'PPO' and 'ppo' (a hostile
    control plane may answer both) named one file. A Kubernetes name is its own file name, as before; any other is
    file_name, `_` and a digest, never a Kubernetes name."""
    from rlark_tui.checks.records import file_stem
    from rlark_tui.raydash.bundle import default_path

    names = ["ppo", "PPO", "Ppo", "ppo.", "a_b", "a/b", "a.b", ".a.b", "p" * 101, "p" * 100, "ppo_" + "0" * 10]
    for made in (sinks.object_file_name, file_stem, lambda name: default_path(name, 0)):
        files = [made(name) for name in names]
        assert len({name.lower() for name in files}) == len(names), files
        assert all("/" not in name and not name.startswith(".") and len(name) <= 200 for name in files)
    assert sinks.object_file_name("ppo-1.b") == "ppo-1.b" and sinks.object_file_name("p" * 100) == "p" * 100
    assert sinks.object_file_name("ppo.").startswith("ppo._")  # Windows drops a name's last dot
    lone = "x\ud800y"  # JSON's '\ud800': a control plane may answer it; no UTF-8 file holds it
    assert sinks.object_file_name(lone) != sinks.object_file_name("x\ud801y") and sinks.keyed_name(lone, 80)
    assert sinks.utf8(lone) == b"x\\ud800y" and sinks.utf8("a\udcffb") == b"a\xffb" and json.loads(
        sinks.utf8(json.dumps(lone, ensure_ascii=False))) == lone
    assert len(sinks.object_file_name("P" * 500)) == sinks.FILE_CHARS


def test_a_secret_is_masked_in_every_shape_it_prints_in():
    value = "first-line-s3cret\nsecond-line-s3cret\n"  # a Secret made from a file; a YAML block scalar
    known = redact.KnownSecrets([value])
    for printed in (value, value.rstrip("\n"), "first-line-s3cret", "  second-line-s3cret",
                    "first-line-s3cret\\nsecond-line-s3cret", "first-line-s3cret second-line-s3cret",
                    json.dumps(value)):
        assert "s3cret" not in known.mask(f"env {printed} end"), printed
    lines = redact.LineRedactor([value]).lines(["echo: first-line-s3cret", "second-line-s3cret", "ok"])
    assert lines == ["echo: ***", "***", "ok"]
    # split by an escape sequence, whole once the text is cleaned for a terminal: masked as it shows
    for split in ("first-\x1b[0mline-s3cret", "first-line-\x1b]0;title\x07s3cret", "first-line\x00-s3cret"):
        assert "s3cret" not in sanitize.clean(known.mask(f"env {split} end")), split
    assert known.mask("env \x1b[1mbold\x1b[0m end") == "env \x1b[1mbold\x1b[0m end"


def test_a_secret_is_masked_in_base64_beside_other_bytes_and_in_gos_json_and_lowercase_percent_escapes():
    """Issue 33, a twenty-fourth round (generated shapes of generated values, 31 of 85 printed): base64 of the value
    after other bytes (a Basic header of `alice:<value>`, a docker config's auth), before them or unpadded (a
    JWT's base64url), JSON as Go writes it (`&`, `<`, `>` as \\u0026, \\u003c, \\u003e) and percent escapes in
    lower case were printed whole. What encodes the value's bytes alone is masked: no 8 characters of it remain."""
    for value in ("hunter2-secret-value", "p@ss&w<o>rd-2024!", "tok_ABCdef0123456789xyz", "h\u00e9llo-w\u00f6rld-s\u00e9cret\n"):
        known = redact.KnownSecrets([value])
        raw = value.encode()
        for before, encode, after in ((b"alice:", base64.b64encode, b""), (b"u:", base64.b64encode, b""),
                                      (b"x", base64.b64encode, b":x"), (b"", base64.urlsafe_b64encode, b""),
                                      (b"", base64.b64encode, b"\x00")):
            printed = encode(before + raw + after).decode().rstrip("=")
            shown = known.mask(f"Authorization: Basic {printed}")
            alone = printed[-(-len(before) // 3) * 4:(len(before) + len(raw)) // 3 * 4]  # the value's bytes alone
            assert not any(alone[at:at + 8] in shown for at in range(len(alone) - 7)), (value, before, shown)
        go_json = json.dumps(value)[1:-1].replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
        lower = re.sub("%[0-9A-F]{2}", lambda hexes: hexes.group().lower(), quote(value.rstrip("\n"), safe=""))
        for printed in (go_json, lower):
            assert printed not in known.mask(f'{{"msg": "{printed}"}}'), (value, printed)


def test_a_50000_deep_value_is_redacted_and_cut():
    deep: list = []
    for _ in range(50_000):
        deep = [deep]
    job = {"metadata": {"annotations": {"a": "[" * 50_000 + "]" * 50_000}}, "spec": {"deep": deep},
           "env": [{"name": "HF_TOKEN", "value": "hf_abcdefgh12345"}]}
    out = redact.redact_object(job)
    assert out["env"][0]["value"] == redact.MASK
    node = out["spec"]["deep"]
    while isinstance(node, list):
        node = node[0]
    assert node == redact.CUT
    assert redact.secret_values(job) == {"hf_abcdefgh12345"}


def test_files_named_after_a_job_stay_in_their_folder(tmp_path):
    """The submitted YAML kept by actions (and found again by the run check), named after a Job whose name came
    from the cluster: `../..` or glob characters neither leave `submitted/` nor match another Job's file."""
    from rlark_tui.checks.gather import _saved_yaml
    from rlark_tui.flow.actions import Actions

    actions = Actions(None, state_dir=tmp_path)
    sha = "ab" * 32
    kept = actions._save({"metadata": {"name": "../../escaped"}}, sha)
    assert kept is not None and kept.parent == tmp_path / "submitted" and kept.name.startswith("_.._escaped_")
    actions._save({"metadata": {"name": "ppo-2"}}, sha)
    assert _saved_yaml(tmp_path, "../../escaped", sha) == str(kept)
    assert _saved_yaml(tmp_path, "ppo-[0-9]", sha) is None


BIDI_FORGED = "evil\u202eRTL\u2066iso\u2069\u2028LS\nStatus: Succeeded\u200f"
"""A name, reason or model with a bidi override, an isolate, a line separator and a newline forging a field."""
RAW_BREAKS = ("\u202e", "\u2066", "\u2069", "\u2028", "\u200f")


def _forges(text: str) -> bool:
    return any(char in text for char in RAW_BREAKS) or any(
        line.lstrip().startswith("Status: Succeeded") for line in text.splitlines())


def test_every_table_and_document_keeps_no_break_and_no_bidi():
    import yaml

    from rlark_tui.cluster.kinds import NODES
    from rlark_tui.cluster.output import render_objects, table
    from rlark_tui.commands.nodeinfo import listed_index
    from rlark_tui.model import nodeinfo
    from rlark_tui.text.parse import load_json, load_yaml
    from rlark_tui.view import nodes

    shown = table(["NAME", "REASON"], [["ppo", BIDI_FORGED]])
    assert not _forges(shown) and "evil\\u202eRTL" in shown and len(shown.splitlines()) == 2
    node = {"apiVersion": "rlinf.io/v1alpha1", "kind": "Node",
            "metadata": {"name": "n1", "namespace": "rlark-x", "labels": {"rlark.io/cluster-id": "rlark-x",
                                                                          "forged": "v"},
                         "annotations": {"rlark.io/gpu-model": BIDI_FORGED, BIDI_FORGED: BIDI_FORGED}},
            "status": {"phase": "Online", "capacity": {"nvidia.com/gpu": "2"},
                       "allocatable": {"nvidia.com/gpu": "2"}}}
    index = listed_index(nodes=[node])
    detail = nodes.node_detail(index, next(iter(index.snapshot.nodes)))
    assert detail is not None and not _forges(nodeinfo.describe_node_text(detail))
    assert not _forges(nodeinfo.clusters_table(nodes.cluster_rows(index)))
    for fmt, load in (("json", load_json), ("yaml", lambda text: load_yaml(text, yaml.SafeLoader))):
        document = render_objects(NODES, [node], fmt, single=True)
        assert not any(char in document for char in RAW_BREAKS), fmt
        assert load(document)["metadata"]["annotations"]["rlark.io/gpu-model"] == BIDI_FORGED, fmt


def test_a_crash_line_and_report_hold_no_bidi_control():
    from rlark_tui.local.crash import report_lines

    try:
        raise ValueError(f"no such Job {BIDI_FORGED}")
    except ValueError as error:
        report = "\n".join(report_lines(error))
    assert "no such Job evil\\u202eRTL" in report
    assert not any(char in report for char in RAW_BREAKS)


def test_a_secret_is_masked_percent_encoded_and_in_wrapped_base64():
    """Issue 33 item 6, a third round: a password in a URL a library logs is percent-encoded
    (`postgres://u:p%40ss%2Fw0rd@db`), and `echo "$V" | base64` or `openssl base64` of a value past 57 or 48
    bytes wraps its lines, so the first line alone decoded to the value's first bytes; each printed bare."""
    import base64
    from urllib.parse import quote

    value = "p@ss/w0rd+x y&z=" + "A7" * 30 + "\n"
    known = redact.KnownSecrets([value])
    body = value.rstrip("\n")
    shown = [f"postgres://u:{quote(body, safe='')}@db/x", f"http://u:{quote(body)}@h", f"pw={quote(body, safe='')}"
             .replace("%20", "+")]
    for width in (64, 76):
        encoded = base64.b64encode(value.encode()).decode()
        shown += [encoded[at:at + width] for at in range(0, len(encoded), width)]
    for printed in shown:
        masked = known.mask(printed)
        assert "w0rd" not in masked and "A7A7" not in masked and masked.count("***") >= 1, (printed, masked)
        assert not any(piece in masked for piece in ("QTdB", "N0E3", "cEBz")), masked


def test_a_yaml_document_holds_no_raw_line_or_paragraph_separator():
    # issue 33, an eleventh round: with allow_unicode (`-o yaml`, the YAML tab and its `Y` copy) PyYAML wrote U+2028,
    # U+2029 and NEL raw in a single-quoted scalar, then the indentation, and the YAML tab's highlighter splits lines
    # where str.splitlines does: a display name 'x<U+2028>phase: Succeeded' showed 'phase: Succeeded' as a line of
    # its own (textual.highlight joins `code.splitlines()` with '\n')
    import yaml

    from rlark_tui.view.yamltab import job_yaml

    for forged in ("x\u2028  phase: Succeeded", "x\u2029phase: Succeeded", "x\x85phase: Succeeded"):
        job = {"metadata": {"name": "j", "annotations": {"rlark.io/display-name": forged}}, "status": {"phase": "Failed"}}
        for document in (job_yaml(job), sinks.yaml_dumps(job, allow_unicode=True)):
            assert not any(char in document for char in "\x85\u2028\u2029"), document
            assert document.splitlines() == document.split("\n")[:-1], document
            assert yaml.safe_load(document)["metadata"]["annotations"]["rlark.io/display-name"] == forged


def test_a_table_lines_up_wide_and_combining_cells():
    # issue 33, an eleventh round: the CLI tables padded each cell by its length in code points, so a cell of East
    # Asian wide characters pushed the rest of its row right, and one character with 10,000 combining marks (one
    # column on a terminal) pulled the rest of its row 10,000 columns left, under other headers, and padded every
    # other row with 10,000 spaces
    from rlark_tui.cluster.output import table

    rows = [["作业作业", "Failed", "3m"], ["e" + "\u0301" * 10_000, "Running", "4m"], ["ok", "Succeeded", "5m"],
            ["👩\u200d👧x", "Pending", "6m"]]
    lines = table(["NAME", "STATUS", "AGE"], rows).splitlines()
    header = lines[0]
    for line, (_, status, age) in zip(lines[1:], rows, strict=True):
        for cell, title in ((status, "STATUS"), (age, "AGE")):
            assert sinks.cell_width(line[:line.index(cell)]) == header.index(title), (line[:40], title)
    assert max(sinks.cell_width(line) for line in lines) < 40
    from rlark_tui.model.nodeinfo import _columns

    lines = _columns([("NAME", "GPUS"), *((name, "8") for name, _, _ in rows)])
    assert {sinks.cell_width(line[:line.rindex(" ") + 1]) for line in lines} == {len(lines[0]) - len("GPUS")}


def test_a_read_of_log_lines_masks_a_known_value_split_by_an_escape_sequence():
    # issue 33: a batch of a Pod's lines (LineRedactor.lines: a bundle's logs, py-spy's dumps) found the known
    # values in the lines as read, so one split by an SGR sequence was left, and was whole once cleaned
    lines = redact.LineRedactor(["zqAbc-defgh42"]).lines(["step 1", "connect zqAbc-\x1b[0mdefgh42", "ok"])
    assert lines == ["step 1", "connect ***", "ok"]
