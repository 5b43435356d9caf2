"""The RLark object model: typed views, placement rules, job drafts, rendering, validation, redaction.

Pure: no I/O anywhere in this package; callers pass API dicts in and get values or findings out.
"""

from rlark_tui.model.build import DraftResult, build_job, parse_nodes
from rlark_tui.model.draft import DraftInputError, JobDraft, Mount, RoleDraft, dump_draft, load_draft
from rlark_tui.model.findings import Finding, has_errors
from rlark_tui.model.keys import DEPLOYMENT_PLAN_ANNOTATION, LAUNCH_RECORD_ANNOTATION
from rlark_tui.model.naming import derive_task_name, job_type, platform_role
from rlark_tui.model.placement import (
    expected_node_rank,
    matching_nodes,
    node_cluster,
    rank_start,
    replicas,
    selector_matches,
    task_namespace,
    total_nodes,
)
from rlark_tui.model.render import deployment_plan, render_job
from rlark_tui.model.validate import validate
from rlark_tui.model.views import Job, Node, Pod, Task, TaskSpec

__all__ = [
    "DEPLOYMENT_PLAN_ANNOTATION", "LAUNCH_RECORD_ANNOTATION",
    "DraftInputError", "DraftResult", "Finding", "JobDraft", "Mount", "RoleDraft",
    "build_job", "deployment_plan", "dump_draft", "has_errors", "load_draft", "parse_nodes", "render_job",
    "validate",
    "Job", "Node", "Pod", "Task", "TaskSpec",
    "derive_task_name", "expected_node_rank", "job_type", "matching_nodes", "node_cluster", "platform_role",
    "rank_start", "replicas", "selector_matches", "task_namespace", "total_nodes",
]
