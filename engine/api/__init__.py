"""The engine's public face: with `engine.events`, the only part of the engine the CLI and the TUI
import (an import-linter contract in pyproject.toml holds them to it).

- `Engine` (engine.py, with its reads in reads.py): opens the config and the store, runs work,
  reads what is stored;
- requests (requests.py): what a front end asks the engine to run;
- views (views.py): typed read models the screens and commands lay out;
- below: the errors the engine raises and the values the front ends name, re-exported from
  where they live so that moving them inside the engine changes no front end.
"""

from engine.api.engine import ClusterAccess, Engine, EvalReport
from engine.api.requests import EvalRequest, PipelineRequest, RprRequest, RsrRequest
from engine.api.views import (
    PLOTTED_METRICS,
    CurveRun,
    DashboardView,
    EpisodeDetail,
    RolloutCurve,
    RunCurvesUpdate,
    StagePass,
    StagePasses,
    SuiteOverview,
    TaskDetail,
    TaskStatus,
)
from engine.cluster import ClusterError
from engine.cluster.access import is_loopback
from engine.cluster.status import NodeStatus
from engine.config import DEFAULT_CONFIG_TOML, Config, ConfigError, load_config, load_preset
from engine.config.paths import builtin_tasks_dir, resolve_paths
from engine.jobs import (
    JOB_ENV,
    JOB_STATUSES,
    CatchUp,
    EventTail,
    JobActivity,
    JournalEntry,
    Pruned,
    RunnerJob,
    UnknownJob,
)
from engine.pipeline.evaluation import PipelineError
from engine.pipeline.families import FamilyCell, FamilyRow
from engine.pipeline.summary import StageOverSeeds
from engine.policy import ModelSpec, PolicyError, parse_model_spec
from engine.results import AgentStep, EpisodeResult
from engine.rollout.agents import SCRIPTED_AGENTS
from engine.rollout.harnesses import HARNESSES
from engine.rpr.stage import RprError
from engine.rsr.frontier import PassEstimate
from engine.rsr.round import RsrError
from engine.stats import RunComparison, TaskAggregate, interval_text
from engine.store import StoreError
from engine.store.records import PIPELINE_STAGES, EpisodeRecord, Runbook, RunRecord, StageRecord
from engine.store.work_lock import WorkBusy
from engine.tasks import Suite, Task
from engine.tasks.curriculum import FAMILIES, CurriculumError
from engine.tasks.curriculum import generate as generate_curriculum
from engine.tasks.importer import import_tasks
from engine.text import (
    COMPLETE_ESCAPE,
    CONTROL_CHARACTER,
    ESCAPE_SEQUENCE,
    UNFINISHED_ESCAPE,
    one_line,
    printable,
    printable_lines,
)

__all__ = [
    # the facade, what it is asked and what it answers
    "Engine",
    "EvalReport",
    "EvalRequest",
    "RsrRequest",
    "RprRequest",
    "PipelineRequest",
    "ClusterAccess",
    "CurveRun",
    "DashboardView",
    "EpisodeDetail",
    "PLOTTED_METRICS",
    "RolloutCurve",
    "RunCurvesUpdate",
    "StageOverSeeds",
    "FamilyCell",
    "FamilyRow",
    "StagePass",
    "StagePasses",
    "SuiteOverview",
    "TaskDetail",
    "TaskStatus",
    # errors
    "ClusterError",
    "ConfigError",
    "CurriculumError",
    "PipelineError",
    "PolicyError",
    "RprError",
    "RsrError",
    "StoreError",
    "UnknownJob",
    "WorkBusy",
    # values
    "AgentStep",
    "CatchUp",
    "Config",
    "DEFAULT_CONFIG_TOML",
    "EpisodeRecord",
    "EpisodeResult",
    "EventTail",
    "FAMILIES",
    "HARNESSES",
    "JOB_ENV",
    "JOB_STATUSES",
    "JobActivity",
    "JournalEntry",
    "ModelSpec",
    "NodeStatus",
    "PIPELINE_STAGES",
    "PassEstimate",
    "RunComparison",
    "RunRecord",
    "Pruned",
    "RunnerJob",
    "Runbook",
    "SCRIPTED_AGENTS",
    "StageRecord",
    "Suite",
    "Task",
    "TaskAggregate",
    # helpers
    "builtin_tasks_dir",
    "generate_curriculum",
    "import_tasks",
    "interval_text",
    "is_loopback",
    "load_config",
    "load_preset",
    "parse_model_spec",
    "resolve_paths",
    # untrusted text made safe to draw (trsi_tui.safe_text adds Rich markup)
    "COMPLETE_ESCAPE",
    "CONTROL_CHARACTER",
    "ESCAPE_SEQUENCE",
    "UNFINISHED_ESCAPE",
    "one_line",
    "printable",
    "printable_lines",
]
