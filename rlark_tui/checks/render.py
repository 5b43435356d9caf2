"""Renderers of a CheckReport: terminal text, the seed's markdown record template (en / zh) and JSON.

Pure; every string that leaves here has passed through redaction (C8) and, text and markdown, `clean` (no
escape sequence from the cluster); JSON escapes them. In the markdown, every field, note and evidence item quoting
cluster text is an inline code span (`sinks.markdown_code`): the record is pasted into an issue, where a link, image,
HTML or mention in it would act.
"""

from __future__ import annotations

from datetime import datetime
from types import MappingProxyType
from typing import Any

from rlark_tui.checks.report import CheckReport, CheckRow, EvidenceItem
from rlark_tui.text.redact import redact_object, redact_text
from rlark_tui.text.sanitize import clean, json_dumps
from rlark_tui.text.sinks import markdown_code, one_line

RESULT_WORDS = MappingProxyType({
    "en": {"pass": "pass", "fail": "fail", "pending": "pending"},
    "zh": {"pass": "符合预期", "fail": "未符合", "pending": "待确认"},
})
TITLES_ZH = MappingProxyType({
    1: "Job 已创建且配置一致",
    2: "Pod 数量和所在节点正确",
    3: "Ray 已按预期启动",
    4: "应用和配置版本一致",
    5: "业务有进展且输出已持久化",
    6: "结果已保存并明确后续处理",
})
_LABELS = MappingProxyType({
    "en": {
        "heading": "# Run check record",
        "run_id": "Run ID", "code": "Code version, image and version; actual digest (if recorded)",
        "config": "Hydra config and command source", "num_nodes": "RLinf `cluster.num_nodes` and execution mode",
        "target": "Target cluster, nodes and resources", "job": "Job name", "yaml": "Submitted YAML",
        "recorder": "Recorder",
        "table": "| Check | Result (pass / fail / pending) | Checked at | Evidence location | Notes / contact |",
        "details": "## Evidence", "conclusion": "## Conclusion", "stage": "Earliest failing stage",
        "unknown": "not recorded", "more": "more", "config_ref": "config", "run_script": "run script",
        "code_ref": "code",
    },
    "zh": {
        "heading": "# 任务运行检查记录",
        "run_id": "运行 ID", "code": "代码版本、镜像地址和版本；实际 digest（如已记录）",
        "config": "Hydra 配置和命令来源", "num_nodes": "RLinf `cluster.num_nodes` 和执行模式",
        "target": "目标集群、节点和资源信息", "job": "Job 名称", "yaml": "提交 YAML 记录", "recorder": "记录人",
        "table": "| 检查项 | 结果（符合预期 / 未符合 / 待确认） | 检查时间 | 记录位置 | 备注/联系人 |",
        "details": "## 证据", "conclusion": "## 最终结论", "stage": "最早出现问题的环节",
        "unknown": "未记录", "more": "更多", "config_ref": "配置", "run_script": "运行脚本", "code_ref": "代码",
    },
})


def _time(value: datetime) -> str:
    return value.isoformat(timespec="seconds")


def title(row: CheckRow, lang: str) -> str:
    return TITLES_ZH[row.id] if lang == "zh" else row.title


def _item_text(item: EvidenceItem) -> str:
    """An evidence item on one line (sinks.one_line): it quotes cluster text (a file path the Job wrote)."""
    if item.kind == "file":
        return one_line(f"{item.ref} ({item.size} bytes, modified {item.mtime}, sha256 {item.sha256 or '?'})")
    text = f"{item.location()} = {item.value}"
    if item.expected is not None:
        text += f" (expected {item.expected})"
    return one_line(text)


def conclusion(report: CheckReport, lang: str = "en") -> str | None:
    """The C9 closing sentence, only when all six rows pass; it names the refs it covers and no more."""
    if not report.all_pass:
        return None
    facts = report.facts
    version = ", ".join(filter(None, [facts.code_ref, *facts.images])) or _LABELS[lang]["unknown"]
    config = facts.config_ref or _LABELS[lang]["unknown"]
    yaml_ref = facts.submitted_yaml or _LABELS[lang]["unknown"]
    if facts.submitted_sha256:
        yaml_ref += f" (sha256 {facts.submitted_sha256})"
    when = _time(report.settled_at)
    if lang == "zh":
        text = (f"本次运行在 {when} 完成，使用代码和镜像 {version}、配置 {config}，并提交了 Job YAML {yaml_ref}。\n"
                "本次已确认 Job 创建、Pod 位于预期节点、Ray 启动、应用与配置版本一致，并看到了任务预期的最小业务进展和"
                "可回读的持久化输出。\n"
                "结果只适用于这组代码、镜像、配置和环境，不能代替 RLinf 版本兼容表、通用训练配方、性能测试或真实机器人安全批准。")
    else:
        text = (f"This run was checked at {when}, using code and image {version}, config {config}, and the "
                f"submitted Job YAML {yaml_ref}.\n"
                "It confirmed that the Job was created, the Pods are on the expected Nodes, Ray started, the "
                "application and config versions are consistent, and the workload's expected minimum progress and "
                "a persisted output that reads back were seen.\n"
                "The result covers only this code, image, config and environment; it does not replace the RLinf "
                "version compatibility table, general training recipes, performance tests or real-robot safety "
                "approval.")
    return redact_text(text)


def to_json(report: CheckReport, lang: str = "en") -> dict[str, Any]:
    """The JSON document of `rlark check --format json` (issue 8 item 4)."""
    document: dict[str, Any] = redact_object({
        "job": report.job,
        "checkedAt": _time(report.checked_at),
        "checks": [{
            "id": row.id,
            "title": title(row, lang),
            "result": row.result,
            "evidence": [item.to_json() for item in row.evidence],
            "checkedAt": _time(row.checked_at),
            "notes": row.all_notes(),
        } for row in report.rows],
        "earliestFailingStage": report.earliest_failing_stage,
        "conclusion": conclusion(report, lang),
    })
    return document


def to_json_text(report: CheckReport, lang: str = "en") -> str:
    return json_dumps(to_json(report, lang), ensure_ascii=False, indent=2)


def to_text(report: CheckReport, lang: str = "en") -> str:
    words = RESULT_WORDS[lang]
    lines = [f"Run check of {report.job} at {_time(report.checked_at)}"]
    for row in report.rows:
        lines.append(f"{row.id}. {words[row.result].upper() if lang == 'en' else words[row.result]:<8} "
                     f"{title(row, lang)}")
        for note in row.all_notes():
            lines.append(f"     - {note}")
        for item in row.evidence[:3]:
            lines.append(f"     > {_item_text(item)}")
        if len(row.evidence) > 3:
            lines.append(f"     > (+{len(row.evidence) - 3} {_LABELS[lang]['more']})")
    stage = report.earliest_failing_stage
    if stage:
        lines.append(f"{_LABELS[lang]['stage']}: {stage}")
    text = conclusion(report, lang)
    if text:
        lines += ["", text]
    return clean(redact_text("\n".join(lines) + "\n"))


def to_markdown(report: CheckReport, lang: str = "en") -> str:
    """The seed's record template: header fields, the six-row table, evidence, and C9's conclusion if all pass."""
    labels = _LABELS[lang]
    words = RESULT_WORDS[lang]
    facts = report.facts
    colon = "：" if lang == "zh" else ": "
    unknown = labels["unknown"]
    code = "; ".join(filter(None, [f"{labels['code_ref']} {markdown_code(facts.code_ref)}" if facts.code_ref else "",
                                   *map(markdown_code, facts.images)])) or unknown
    config = "; ".join(filter(None, [f"{labels['config_ref']} {markdown_code(facts.config_ref)}"
                                     if facts.config_ref else "",
                                     f"{labels['run_script']} {markdown_code(facts.run_script)}"
                                     if facts.run_script else ""])) or unknown
    mode = "; ".join(map(markdown_code, filter(None, [facts.num_nodes, facts.placement_mode])))
    yaml_ref = markdown_code(facts.submitted_yaml) or unknown
    if facts.submitted_sha256:
        yaml_ref += f" (sha256 {markdown_code(facts.submitted_sha256)})"
    lines = [
        labels["heading"], "",
        f"- {labels['run_id']}{colon}{markdown_code(facts.run_id) or unknown}",
        f"- {labels['code']}{colon}{code}",
        f"- {labels['config']}{colon}{config}",
        f"- {labels['num_nodes']}{colon}{mode or unknown}",
        f"- {labels['target']}{colon}{'; '.join(map(markdown_code, facts.placement)) or unknown}",
        f"- {labels['job']}{colon}{markdown_code(facts.job_name)}",
        f"- {labels['yaml']}{colon}{yaml_ref}",
        f"- {labels['recorder']}{colon}{report.hand_over.recorder or unknown}",
        "",
        labels["table"],
        "| --- | --- | --- | --- | --- |",
    ]
    for row in report.rows:
        locations = [markdown_code(item.location(), cell=True) for item in row.evidence[:2]]
        if len(row.evidence) > 2:
            locations.append(f"+{len(row.evidence) - 2} {labels['more']}")
        notes = [markdown_code(note, cell=True) for note in row.all_notes()]
        lines.append(f"| {row.id}. {title(row, lang)} | {words[row.result]} | {_time(row.checked_at)} | "
                     f"{'; '.join(locations)} | {'; '.join(notes)} |")
    stage = report.earliest_failing_stage
    if stage:
        lines += ["", f"{labels['stage']}{colon}{stage}"]
    lines += ["", labels["details"]]
    for row in report.rows:
        lines += ["", f"### {row.id}. {title(row, lang)} — {words[row.result]}"]
        lines += [f"- {markdown_code(note)}" for note in row.all_notes()]
        lines += [f"- {markdown_code(_item_text(item))}" for item in row.evidence]
    text = conclusion(report, lang)
    if text:
        lines += ["", labels["conclusion"], "", "```text", text, "```"]
    return clean(redact_text("\n".join(lines) + "\n"))


RENDERERS = MappingProxyType({"text": to_text, "md": to_markdown, "json": to_json_text})
