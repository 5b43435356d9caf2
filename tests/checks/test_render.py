"""The record as a user reads it: markdown per the seed's template (en / zh), JSON shape, terminal text (C7–C9)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

from rlark_tui.checks import HandOver, evaluate, to_json, to_json_text, to_markdown, to_text, with_hand_over
from rlark_tui.checks.evaluate import carry_settled

from . import fixtures as fx
from .scenarios import SCENARIOS

ZH_FIELDS = ("# 任务运行检查记录", "- 运行 ID：`ppo-demo-1`", "- 代码版本、镜像地址和版本；实际 digest（如已记录）：",
             "- Hydra 配置和命令来源：", "- RLinf `cluster.num_nodes` 和执行模式：", "- 目标集群、节点和资源信息：",
             "- Job 名称：`demo-ppo`", "- 提交 YAML 记录：`/state/submitted/demo-ppo.yaml`", "- 记录人：Li Lei",
             "| 检查项 | 结果（符合预期 / 未符合 / 待确认） | 检查时间 | 记录位置 | 备注/联系人 |")


def test_zh_markdown_follows_the_seed_template_with_its_result_words():
    report = evaluate(fx.healthy(), HandOver(recorder="Li Lei", contacts=("ops@example.com",), decision="continue"))
    text = to_markdown(report, "zh")
    for field in ZH_FIELDS:
        assert field in text
    assert "| 1. Job 已创建且配置一致 | 符合预期 | 2026-11-29T12:03:00+00:00 |" in text
    assert "| 6. 结果已保存并明确后续处理 | 符合预期 |" in text
    assert "ops@example.com" in text
    assert "本次运行在 2026-11-29T12:03:00+00:00 完成" in text
    assert "不能代替 RLinf 版本兼容表" in text


def test_zh_words_for_fail_and_pending():
    failing = to_markdown(evaluate(SCENARIOS["wrong rank"][0]), "zh")
    assert "| 3. Ray 已按预期启动 | 未符合 |" in failing
    assert "最早出现问题的环节：ray" in failing
    pending = to_markdown(evaluate(SCENARIOS["no submitted spec"][0]), "zh")
    assert "| 1. Job 已创建且配置一致 | 待确认 |" in pending


def test_conclusion_only_when_all_six_pass():
    for name, (evidence, expected, _) in SCENARIOS.items():
        report = evaluate(evidence, fx.DECIDED)
        has = "This run was checked at" in to_markdown(report)
        assert has == (expected == ["pass"] * 6), name
        assert (to_json(report)["conclusion"] is not None) == has


def test_english_markdown_names_every_template_field():
    text = to_markdown(evaluate(fx.healthy()))
    for label in ("- Run ID: `ppo-demo-1`", f"- Code version, image and version; actual digest (if recorded): code "
                  f"`{fx.CODE_REF}`", "- Hydra config and command source: config `sha256:", "cluster.num_nodes",
                  "- Target cluster, nodes and resources: `actor: rlark-gpu-a on gpu-a1", "- Job name: `demo-ppo`",
                  "- Submitted YAML: `/state/submitted/demo-ppo.yaml` (sha256 `", "- Recorder: not recorded"):
        assert label in text


def test_json_has_exactly_the_documented_shape():
    document = json.loads(to_json_text(evaluate(SCENARIOS["wrong rank"][0])))
    assert set(document) == {"job", "checkedAt", "checks", "earliestFailingStage", "conclusion"}
    assert document["job"] == "demo-ppo"
    assert document["earliestFailingStage"] == "ray"
    assert document["conclusion"] is None
    assert [c["id"] for c in document["checks"]] == [1, 2, 3, 4, 5, 6]
    for check in document["checks"]:
        assert set(check) == {"id", "title", "result", "evidence", "checkedAt", "notes"}
        assert check["result"] in ("pass", "fail", "pending")
    rank = [e for e in document["checks"][2]["evidence"] if e["kind"] == "log" and e["ref"] == "demo-ppo-env-0"]
    assert rank == [{"kind": "log", "ref": "demo-ppo-env-0", "container": "main", "instance": 0, "line": 1,
                     "value": "RLINF_NODE_RANK: 1"}]


def test_text_shows_each_row_with_its_reason():
    text = to_text(evaluate(SCENARIOS["wrong rank"][0]))
    assert "3. FAIL     Ray started as expected" in text
    assert "demo-ppo-env-0: RLINF_NODE_RANK 1, expected 2 (rank start 2 + ordinal 0)" in text
    assert "Earliest failing stage: ray" in text


def test_stop_decision_before_outputs_persist_is_warned():
    report = evaluate(SCENARIOS["no launch record"][0], HandOver(decision="stop"))
    notes = report.row(6).all_notes()
    assert "decision: stop (by an authorised person, after outputs persist)" in notes
    assert "outputs are not confirmed persisted (check 5): do not stop yet" in notes
    assert any("does not resume from a checkpoint" in n for n in notes)


def test_changing_hand_over_fields_only_recomputes_the_summary():
    hand_over = HandOver(recorder="Li Lei", contacts=("ops@example.com",), decision="keep", notes="flaky node")
    for name, (evidence, _, _) in SCENARIOS.items():
        assert with_hand_over(evaluate(evidence), hand_over) == evaluate(evidence, hand_over), name


def test_conclusion_time_is_when_the_last_row_settled():
    lines = fx.head_lines(steps=0)
    waiting = evaluate(fx.with_log(fx.healthy(), "demo-ppo-actor-0", lines), fx.DECIDED)
    assert waiting.row(5).result == "pending"
    settled_at = fx.NOW + timedelta(minutes=1)
    moved = carry_settled(waiting, evaluate(fx.healthy(now=settled_at), fx.DECIDED))
    later = carry_settled(moved, evaluate(fx.healthy(now=settled_at + timedelta(minutes=5)), fx.DECIDED))
    assert [row.checked_at for row in later.rows] == [fx.NOW] * 4 + [settled_at] * 2
    assert later.settled_at == settled_at and later.checked_at == settled_at + timedelta(minutes=5)
    assert f"This run was checked at {settled_at.isoformat(timespec='seconds')}" in to_markdown(later)
    undecided = carry_settled(later, evaluate(fx.healthy(now=settled_at), replace(fx.DECIDED, decision=None)))
    assert undecided.row(6).result == "pending"
    assert "decision not recorded" in "\n".join(undecided.row(6).all_notes())


def test_the_agreed_stop_condition_and_the_clean_up_box_are_in_the_record():
    evidence = fx.healthy(launch_record=dict(fx.record(), stopCondition="after global step 1000, or 12 h"))
    unticked = to_markdown(evaluate(evidence, fx.DECIDED))
    assert "agreed stop condition: after global step 1000, or 12 h" in unticked
    assert "[ ] temporary access and secrets cleaned up" in unticked
    ticked = to_markdown(evaluate(evidence, replace(fx.DECIDED, cleaned_up=True)))
    assert "[x] temporary access and secrets cleaned up" in ticked


def test_a_line_break_in_cluster_text_forges_no_row_of_the_report():
    """Issue 33, an eleventh round: a row's notes and evidence quote cluster text (an event's message, which a
    kubelet fills from the Pod's own probe output; a file path the Job wrote), and `rlark check`, its saved record
    and the run-check screen printed them as they were: 'no volume\\n3. PASS     Ray: forged' showed a forged row 3
    that passed. Each note and evidence item is one line (sinks.one_line)."""
    from rlark_tui.checks.evidence import PodEvent

    evidence = fx.healthy()
    forged = "no volume\n3. PASS     Ray: forged\u2028\r\n### 3. Ray — pass"
    pod = evidence.pods[0]["spec"]["podName"]
    files = tuple(replace(f, path=f.path + "\n5. PASS     forged") for f in evidence.outputs.files)
    report = evaluate(replace(evidence, events={pod: (PodEvent("Warning", "FailedMount", forged),)},
                              outputs=replace(evidence.outputs, files=files)), fx.DECIDED)
    for text in (to_text(report), to_markdown(report)):
        assert "\u2028" not in text and "no volume\\n3. PASS     Ray: forged" in text, text
        assert not [line for line in text.splitlines()
                    if line.lstrip().startswith(("3. PASS     Ray: forged", "5. PASS     forged", "### 3. Ray — pass"))]
    assert all("\n" not in note for row in report.rows for note in row.all_notes())


def test_the_records_header_and_conclusion_hold_each_field_on_its_line():
    """Issue 33, a fourteenth round (a Job author's launch record in the run check's record): the record's header
    fields and its conclusion quote the launch record (runId, codeRef, configRef: an annotation the Job's author
    may edit), and the Markdown record (`rlark check --output`, the record attached to an issue) and the text
    printed them as they were: a runId 'ppo-1<LF>- Recorder: alice (approved)' forged the Recorder field above
    the real one, and a codeRef with a line and a fence ended the conclusion's code block early. Each is one line;
    a run script's backtick no longer ends its code span."""
    evidence = fx.healthy()
    forged = dict(evidence.launch_record, runId="ppo-1\n- Recorder: alice (approved)\u2028",
                  codeRef="abc\n```\n## Approved for production")
    report = evaluate(replace(evidence, launch_record=forged), fx.DECIDED)
    markdown = to_markdown(report)
    lines = markdown.splitlines()
    assert "- Run ID: `ppo-1\\n- Recorder: alice (approved)\\u2028`" in lines
    assert [line for line in lines if line.startswith("- Recorder:")] == ["- Recorder: me"]
    assert not [line for line in lines + to_text(report).splitlines() if line.startswith("## Approved")]
    assert [line for line in lines if line.startswith("```")] in ([], ["```text", "```"])
    script = dict(forged, runId="ppo-2")
    head = evidence.job["spec"]["tasks"][0]
    job = dict(evidence.job, spec=dict(evidence.job["spec"], tasks=[dict(head, runScript="run `[x](http://e)`"),
                                                                      *evidence.job["spec"]["tasks"][1:]]))
    config = next(line for line in to_markdown(evaluate(replace(evidence, job=job, launch_record=script)))
                  .splitlines() if line.startswith("- Hydra config"))
    assert config.endswith("run script `` run `[x](http://e)` ``"), config


MARKUP = ("![t](http://127.0.0.1:9/track.png)", "<img src=http://127.0.0.1:9/i.png>", "[ok](javascript:alert(1))",
          "@rlinf/maintainers", "www.example.com/login", "http://127.0.0.1:9/x", "**bold** `tick` a|b c\\|d")


def test_cluster_text_in_the_markdown_record_is_no_markup_where_it_is_pasted():
    """Issue 33, a sixteenth round (the record someone pastes into an RLinf issue): `rlark check --format md` and
    the saved record quoted an event's message, an evidence path, the launch record's run id and code ref, images
    and role names as they were, so an image tracked every reader of the issue, `<img>` and links were live, an
    `@team` was pinged, and a `|` split a cell of the table. Each is an inline code span (sinks.markdown_code), as
    a GFM renderer (markdown-it with tables and linkify) reads it."""
    from markdown_it import MarkdownIt

    from rlark_tui.checks.evidence import PodEvent

    evidence = fx.healthy()
    hostile = " ".join(MARKUP)
    pod = evidence.pods[0]["spec"]["podName"]
    files = tuple(replace(f, path=f.path + hostile) for f in evidence.outputs.files)
    record = dict(evidence.launch_record, runId=hostile, codeRef=hostile, configRef=hostile)
    report = evaluate(replace(evidence, events={pod: (PodEvent("Warning", "FailedMount", hostile),)},
                              launch_record=record, outputs=replace(evidence.outputs, files=files)), fx.DECIDED)
    tokens = MarkdownIt("gfm-like").parse(to_markdown(report))
    inline = [child for token in tokens for child in token.children or ()]
    assert not [t.type for t in tokens + inline if t.type in ("link_open", "image", "html_inline", "html_block")]
    assert sum(hostile in t.content for t in inline if t.type == "code_inline") >= 5
    plain = " ".join(t.content for t in inline if t.type == "text")
    assert not [word for word in ("http", "www.", "@rlinf", "<img", "**bold") if word in plain], plain
    rows = " ".join(t.type for t in tokens if t.type in ("tr_open", "td_open", "th_open")).split("tr_open")[1:]
    assert [row.split() for row in rows] in ([["th_open"] * 5] + [["td_open"] * 5] * 6,), rows
