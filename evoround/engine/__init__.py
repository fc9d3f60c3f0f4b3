"""The round protocol and the job: the controller (the one file with the round boundary),
the job runner with resume, retries and limits, reference states, regrading and task
validation. The Ray executor is imported only when ``--executor ray`` asks for it.
"""

from evoround.engine._cluster import ClusterError
from evoround.engine._executor import RunnerLost, RunOptions
from evoround.engine._job import (
    BaseImageUnavailable,
    JobConfigMismatch,
    default_job_name,
    run_job,
    snapshot_mode,
    write_job_config,
)
from evoround.engine._joblock import LOCK_FILE, JobLocked, JobLockRecord, job_holder, job_lock
from evoround.engine._regrade import DIFF, REGRADED, regrade_job, regraded_view
from evoround.engine._retry import is_model_api_error
from evoround.engine._units import JobObserver, Unit
from evoround.engine._validate import CHECKS, Status, TaskValidation, check_leaks, validate_task

__all__ = [
    "BaseImageUnavailable",
    "CHECKS",
    "ClusterError",
    "DIFF",
    "JobConfigMismatch",
    "JobLockRecord",
    "JobLocked",
    "JobObserver",
    "LOCK_FILE",
    "REGRADED",
    "RunOptions",
    "RunnerLost",
    "Status",
    "TaskValidation",
    "Unit",
    "check_leaks",
    "default_job_name",
    "is_model_api_error",
    "job_holder",
    "job_lock",
    "regrade_job",
    "regraded_view",
    "run_job",
    "snapshot_mode",
    "validate_task",
    "write_job_config",
]
