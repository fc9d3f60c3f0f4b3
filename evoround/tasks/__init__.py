"""The task format: model, loader, cumulative-test overlay, lint, schema, scaffolding.

Knows nothing of how tasks are run; everything else reads tasks through this door.
"""

from evoround.tasks._errors import (
    describe_error,
    did_you_mean,
    known_keys,
    unknown_key_message,
)
from evoround.tasks._lint import lint_task
from evoround.tasks._loader import (
    TaskFormatError,
    discover_tasks,
    library_path,
    load_task,
    load_tasks,
    task_file_error,
)
from evoround.tasks._model import (
    Activity,
    ArtifactPaths,
    ChangeType,
    CheckCategory,
    CheckKind,
    CheckScope,
    CheckSpec,
    EnvironmentSpec,
    HealthcheckSpec,
    Round,
    RoundSpec,
    SolutionSpec,
    Style,
    Task,
    TaskFile,
    TaskMeta,
    VerifierSpec,
    resolve_host_env,
)
from evoround.tasks._overlay import (
    ActiveTest,
    FailureClass,
    active_tests,
    failure_class_for,
    is_test_module,
)
from evoround.tasks._scaffold import new_task
from evoround.tasks._schema import task_schema_json

__all__ = [
    "describe_error",
    "did_you_mean",
    "known_keys",
    "unknown_key_message",
    "ActiveTest",
    "Activity",
    "ArtifactPaths",
    "ChangeType",
    "CheckCategory",
    "CheckKind",
    "CheckScope",
    "CheckSpec",
    "EnvironmentSpec",
    "FailureClass",
    "HealthcheckSpec",
    "Round",
    "RoundSpec",
    "SolutionSpec",
    "Style",
    "Task",
    "TaskFile",
    "TaskFormatError",
    "TaskMeta",
    "VerifierSpec",
    "active_tests",
    "discover_tasks",
    "failure_class_for",
    "is_test_module",
    "library_path",
    "lint_task",
    "load_task",
    "load_tasks",
    "new_task",
    "resolve_host_env",
    "task_file_error",
    "task_schema_json",
]
