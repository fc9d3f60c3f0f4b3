"""What a job records and how it is read back: round records, trajectories, check verdicts,
the results file, the job's config lock and the metrics over them.

The lowest shared layer: the engine writes these records, reports and compare read
them, and none of that needs a sandbox or an agent.
"""

from evoround.results._changes import (
    CHANGES_FILE,
    PATCH_FILE,
    FileChange,
    RoundChanges,
)
from evoround.results._changes import MAX_DIFFED_BYTES as MAX_DIFFED_BYTES
from evoround.results._changes import MAX_LISTED as MAX_LISTED
from evoround.results._changes import MAX_PATCH_BYTES as MAX_PATCH_BYTES
from evoround.results._checks import CheckOutcome, CheckResult, Evidence
from evoround.results._cost import Cost, cost_of
from evoround.results._jobdir import (
    ISOLATION_FILE,
    JobConfig,
    JobRunning,
    JobView,
    NotAJobDir,
    TaskRef,
    load_job,
    read_job_config,
)
from evoround.results._metrics import Metrics, compute_metrics, dedupe
from evoround.results._recorder import (
    DuplicateRecord,
    ResultLine,
    ResultsWriter,
    problem_summary,
    read_results,
    scan_results,
)
from evoround.results._records import (
    INFRA_STATUSES,
    Mode,
    ModelUsage,
    RoundResult,
    RoundStatus,
    RoundUsage,
    TestOutcome,
    TestResult,
    Timings,
    VerifierOutcome,
    classify,
)
from evoround.results._trajectory import EventType, TrajectoryEvent, truncate

__all__ = [
    "CHANGES_FILE",
    "PATCH_FILE",
    "FileChange",
    "RoundChanges",
    "MAX_DIFFED_BYTES",
    "MAX_LISTED",
    "MAX_PATCH_BYTES",
    "ISOLATION_FILE",
    "Cost",
    "DuplicateRecord",
    "cost_of",
    "CheckOutcome",
    "CheckResult",
    "EventType",
    "Evidence",
    "INFRA_STATUSES",
    "JobConfig",
    "JobRunning",
    "JobView",
    "Metrics",
    "Mode",
    "ModelUsage",
    "NotAJobDir",
    "ResultLine",
    "ResultsWriter",
    "RoundResult",
    "RoundStatus",
    "RoundUsage",
    "TaskRef",
    "TestOutcome",
    "TestResult",
    "Timings",
    "TrajectoryEvent",
    "VerifierOutcome",
    "classify",
    "compute_metrics",
    "dedupe",
    "load_job",
    "read_job_config",
    "problem_summary",
    "read_results",
    "scan_results",
    "truncate",
]
