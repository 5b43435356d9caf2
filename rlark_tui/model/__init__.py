"""The RLark object model: typed views, placement rules, job drafts, rendering, validation, redaction.

Pure: no I/O anywhere in this package; callers pass API dicts in and get values or findings out.
The names below load on first use (`from rlark_tui.model import Job`): importing one submodule, e.g. `redact` for
an error message, does not load drafts, validation and rendering (start-up time of `rlark get`). The `validate`
function is not among them: a lazily named attribute would be the submodule of the same name once that is loaded;
import it from `rlark_tui.model.validate`.
"""

import importlib

_FROM = {
    "build": ("DraftResult", "build_job", "parse_nodes"),
    "draft": ("DraftInputError", "JobDraft", "Mount", "RoleDraft", "dump_draft", "load_draft"),
    "findings": ("Finding", "has_errors"),
    "keys": ("DEPLOYMENT_PLAN_ANNOTATION", "LAUNCH_RECORD_ANNOTATION"),
    "naming": ("derive_task_name", "job_type", "platform_role"),
    "placement": ("expected_node_rank", "matching_nodes", "node_cluster", "rank_start", "replicas",
                  "selector_matches", "task_namespace", "total_nodes"),
    "render": ("deployment_plan", "render_job"),
    "views": ("Job", "Node", "Pod", "Task", "TaskSpec"),
}
_MODULE_OF = {name: module for module, names in _FROM.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str):
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
