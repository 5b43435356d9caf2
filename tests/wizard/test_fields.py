"""The wizard's field table, its one handler, the text forms and the places of findings (pure, no app)."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlark_tui.jobspec import wizard_fields as wf
from rlark_tui.jobspec.draft import JobDraft, Mount, RoleDraft
from rlark_tui.jobspec.findings import Finding
from rlark_tui.model.objects import Node
from rlark_tui.model.placement import node_clusters


@pytest.mark.parametrize("text, selector", [
    ("kubernetes.io/hostname=gpu-a1", {"kubernetes.io/hostname": "gpu-a1"}),
    ("a=1, b=2", {"a": "1", "b": "2"}),
    ("a=1 b=2", {"a": "1", "b": "2"}),
    ("host=x,y", {"host": "x,y"}),
    ("host=x host=y", {"host": "x,y"}),
    ("a=", {"a": ""}),
    ("", {}),
])
def test_selector_text(text, selector):
    assert wf.parse_selector(text) == selector
    assert wf.parse_selector(wf.format_selector(selector)) == selector


def test_selector_word_without_key_is_a_form_error():
    with pytest.raises(wf.FormError, match="'gpu' is not key=value"):
        wf.parse_selector("gpu")


def selector_of_runs(text):
    """The selector a text means, or the FormError's words: the text's words (commas are spaces), in runs that each
    begin with a `key=value` word; a key's values are those of its runs, in order, joined by commas."""
    runs = []
    for word in text.replace(",", " ").split():
        if "=" in word:
            key, _, value = word.partition("=")
            if not key.strip():
                return f"'{word if len(word) <= 40 else word[:40] + '…'}' has no label key before ="
            runs.append((key.strip(), [value.strip()]))
        elif runs:
            runs[-1][1].append(word)
        else:
            return f"'{word if len(word) <= 40 else word[:40] + '…'}' is not key=value"
    keys = list(dict.fromkeys(key for key, _ in runs))
    return {key: ",".join(value for each, values in runs if each == key for value in values) for key in keys}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "host", "=", "==", " ", ",", "\t", "\u3000", "\x1c", "x" * 45]),
                max_size=12).map("".join))
def test_a_selector_is_parsed_as_its_runs_of_words_mean(text):
    """Each key's values are joined once, at the end (issue 33: joined at each word, a 1 MB selector took 8-12 s):
    the same selectors and refusals as the text's runs of words mean."""
    try:
        parsed = wf.parse_selector(text)
    except wf.FormError as exc:
        parsed = str(exc)
    assert parsed == selector_of_runs(text)


def test_a_1_mb_selector_is_parsed_within_two_seconds_of_cpu():
    """Issue 33, H33d, a Job author's selector of 1 MB (500,000 words of one key): each word was added to its key's
    value by copying the value, quadratic, 8.4 s of the UI thread; 0.11-0.13 s of the parse's thread now. (It was
    parsed in a child Python under a CPU limit, whose start and imports were most of the test's time.)"""
    text = "kubernetes.io/hostname=gpu-a1 " + "a " * 500_000
    started = time.thread_time()
    parsed = wf.parse_selector(text)
    used = time.thread_time() - started
    assert len(parsed["kubernetes.io/hostname"]) == len("gpu-a1") + 2 * 500_000
    assert used < 2, f"a 1 MB selector took {used:.2f} s of CPU to parse"


@pytest.mark.parametrize("text, devices, problem", [
    ("rlinf.io/franka=1", {"rlinf.io/franka": 1}, None),
    ("rlinf.io/a=1, rlinf.io/b=2", {"rlinf.io/a": 1, "rlinf.io/b": 2}, None),
    ("rlinf.io/a", None, "is not name=count"),
    ("rlinf.io/a=x", None, "whole number"),
])
def test_devices_text(text, devices, problem):
    if problem:
        with pytest.raises(wf.FormError, match=problem):
            wf.parse_devices(text)
    else:
        assert wf.parse_devices(text) == devices
        assert wf.parse_devices(wf.format_devices(devices)) == devices


def test_env_lines_keep_spaces_and_refuse_bad_lines():
    env = wf.parse_env("HF_HOME=/data/hf\n\n# comment\nMSG=hello world\n")
    assert env == {"HF_HOME": "/data/hf", "MSG": "hello world"}
    assert wf.parse_env(wf.format_env(env)) == env
    with pytest.raises(wf.FormError, match="line 1: write NAME=value"):
        wf.parse_env("nonsense")
    with pytest.raises(wf.FormError, match="line 2: A is set twice"):
        wf.parse_env("A=1\nA=2")


def test_mount_lines():
    mounts = wf.parse_mounts("host /data /mnt/data\nstorage s3-rclone /mnt/ckpt\n")
    assert mounts == (Mount(type="host", source="/data", target="/mnt/data"),
                      Mount(type="storage", storage_class="s3-rclone", target="/mnt/ckpt"))
    assert wf.parse_mounts(wf.format_mounts(mounts)) == mounts
    half_done = (Mount(type="host", source="", target="/mnt/data"), Mount(type="storage", target=""))
    assert wf.format_mounts(half_done) == 'host "" /mnt/data\nstorage "" ""'
    assert wf.parse_mounts(wf.format_mounts(half_done)) == half_done
    with pytest.raises(wf.FormError, match="line 1: write `host"):
        wf.parse_mounts("nfs /a /b")


@pytest.mark.parametrize("field, place", [
    ("name", wf.Place(1, None, "name")),
    ("header", wf.Place(1, None, "header")),
    ("roles", wf.Place(1, None, "roles")),
    ("roles[2].name", wf.Place(1, 2, "role-name")),
    ("roles[1].selector.kubernetes.io/hostname", wf.Place(2, 1, "selector", ".kubernetes.io/hostname")),
    ("roles[0].mounts[1].target", wf.Place(2, 0, "mounts", "[1].target")),
    ("roles[0].gpu", wf.Place(2, 0, "gpu")),
    ("domain", wf.Place(3, None, "domain")),
    ("runScript", wf.Place(3, None, "runScript")),
    ("record.progressPattern", wf.Place(3, None, "record-progressPattern")),
    ("metadata.name", wf.Place(4, None, "preview", "metadata.name")),
])
def test_place_of_finding_fields(field, place):
    assert wf.place_of(field) == place


def test_finding_line_names_the_sub_field():
    finding = Finding("error", "roles[0].mounts[1].target", "must be an absolute path")
    assert wf.finding_line(finding, wf.place_of(finding.field)) == "line 2 target: must be an absolute path"
    finding = Finding("error", "roles[0].env.RLARK_X", "is set by the platform")
    assert wf.finding_line(finding, wf.place_of(finding.field)) == "RLARK_X: is set by the platform"


def node(name: str, cluster: str, labels: dict, allocatable: dict) -> Node:
    return Node({"metadata": {"name": name, "namespace": cluster,
                              "labels": {"kubernetes.io/hostname": name, "rlark.io/cluster-id": cluster, **labels}},
                 "status": {"phase": "Online", "allocatable": allocatable}})


NODES = [node("a1", "rlark-a", {"gpu-model": "h100"}, {"nvidia.com/gpu": "8"}),
         node("a2", "rlark-a", {"gpu-model": "h100"}, {"nvidia.com/gpu": "4"}),
         node("b1", "rlark-b", {}, {"rlinf.io/franka": "1"})]


def test_node_facts_for_the_form():
    assert node_clusters(NODES) == ("rlark-a", "rlark-b")
    assert wf.label_choices(NODES, "rlark-a") == (
        ("kubernetes.io/hostname", "a1", 1), ("kubernetes.io/hostname", "a2", 1), ("gpu-model", "h100", 2))
    assert wf.gpu_maximum(NODES[:2]) == 4
    assert wf.gpu_maximum(NODES[2:]) is None
    assert wf.device_summary(NODES, "rlark-b") == "rlinf.io/franka (b1: 1)"
    assert wf.node_devices(NODES[2]) == "rlinf.io/franka=1"


def test_gateway_ssh_keys():
    keys = wf.ssh_key_choices([{"user": "alice", "public_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGu0 a@h"},
                               {"user": "bob"}])
    assert keys == [("alice: ssh-ed25519 …AAAAIGu0 a@h", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGu0 a@h")]


# ---- the field table and its one handler ------------------------------------------------------------------------

FACTS = wf.WizardFacts(nodes=tuple(NODES), jobs=(), domains=("team-a",))


def draft_of(*roles: str, **top) -> JobDraft:
    return JobDraft(type="rl", roles=tuple(RoleDraft(name=r, cluster="rlark-a") for r in roles), **top)


@pytest.mark.parametrize("row", wf.FIELDS, ids=lambda row: row.key)
def test_every_row_is_where_its_findings_show(row):
    """A finding on a field's path shows beside that field, in its step: a new row needs nothing else."""
    if row.into or row.key in ("role-pick", "header3"):
        return
    place = wf.place_of(row.path(1))
    assert (place.step, place.key, place.role) == (row.step, row.key, 1 if row.role else None)


def test_the_handler_parses_or_keeps_the_problem():
    draft = draft_of("Actor", "Rollout")
    change = wf.apply(wf.BY_KEY["selector"], draft, 1, "pool=a pool2=b", FACTS)
    assert change.draft.roles[1].selector == {"pool": "a", "pool2": "b"} and change.path == "roles[1].selector"
    assert not change.problem
    change = wf.apply(wf.BY_KEY["gpu"], draft, 0, "x", FACTS)
    assert change.draft == draft and change.path == "roles[0].gpu" and "whole number" in change.problem
    change = wf.apply(wf.BY_KEY["record-maxWaitSeconds"], draft, 0, "0", FACTS)
    assert change.path == "record.maxWaitSeconds" and change.problem == "must be a whole number ≥ 1"
    assert wf.apply(wf.BY_KEY["record-maxWaitSeconds"], draft, 0, "60", FACTS).draft.record == {"maxWaitSeconds": 60}
    assert wf.apply(wf.BY_KEY["name"], draft, 0, "ppo-1", FACTS).draft.name == "ppo-1"


def test_pickers_fill_another_field_and_only_clearable_selects_clear():
    draft = draft_of("Actor")
    draft = wf.apply(wf.BY_KEY["selector"], draft, 0, "gpu-model=h100", FACTS).draft
    change = wf.apply(wf.BY_KEY["label-pick"], draft, 0, "kubernetes.io/hostname=a1", FACTS)
    assert (change.fill, change.text) == ("selector", "gpu-model=h100 kubernetes.io/hostname=a1")
    assert change.draft == draft
    assert wf.apply(wf.BY_KEY["label-pick"], draft, 0, None, FACTS) == wf.Change(draft)
    assert wf.apply(wf.BY_KEY["cluster"], draft, 0, None, FACTS).draft.roles[0].cluster == ""
    with_domain = replace(draft, domain="team-a")
    assert wf.apply(wf.BY_KEY["domain"], with_domain, 0, None, FACTS).draft.domain == ""
    assert wf.apply(wf.BY_KEY["header"], draft, 0, None, FACTS).draft == draft


def test_roles_type_presets_rename_add_remove():
    draft = wf.apply(wf.BY_KEY["type"], draft_of("Actor", "Rollout", "Environment", header="Actor"), 0,
                     "evaluation", FACTS).draft
    assert [r.name for r in draft.roles] == ["Rollout", "Environment"] and draft.header == ""
    assert draft.roles[0].cluster == "rlark-a", "a preset role of the same name keeps its settings"
    draft = wf.apply(wf.BY_KEY["header"], draft, 0, 1, FACTS).draft
    assert draft.header == "Environment"
    draft = wf.rename_role(draft, 1, "Env2")
    assert draft.header == "Env2"
    draft = wf.add_role(wf.add_role(draft))
    assert [r.name for r in draft.roles] == ["Rollout", "Env2", "New role", "New role 2"]
    assert wf.remove_role(draft, 1).header == "" and len(wf.remove_role(draft, 9).roles) == 4
    assert wf.task_label(draft.roles[1]) == "task: env2 · Env"


async def test_a_choice_quoting_outside_text_is_plain_text_on_its_line():
    # an SSH key's comment from the gateway (or a role name of an imported draft) in a select's list was Textual
    # markup: '[@click=app.quit]' an action on a click, a line break a second line
    from textual.app import App
    from textual.widgets import Select

    from rlark_tui.screens.wizard_steps import set_choices

    class One(App):
        def compose(self):
            yield Select([], prompt="choose", id="pick")

    app = One()
    async with app.run_test(size=(80, 12)) as pilot:
        select = app.query_one(Select)
        set_choices(select, [("alice: ssh-ed25519 …abcd [@click=app.quit]me[/]\nx", "key")], None)
        select.expanded = True
        await pilot.pause()
        overlay = app.query_one("SelectOverlay")
        rendered = [overlay.render_line(y) for y in range(overlay.size.height)]
        assert any("[@click=app.quit]me[/]\\nx" in line.text for line in rendered), [line.text for line in rendered]
        assert not [s.style.meta for line in rendered for s in line if s.style and "@click" in s.style.meta]
