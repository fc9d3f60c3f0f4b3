"""Everything a person or a program reads about finished jobs: the text report, the
analysis behind the HTML report, job comparison and the headless-browser check.

Depends on ``evoround.results`` only, never on sandboxes or agents.
"""

from evoround.reports._analysis import build_report
from evoround.reports._atif import AtifTrajectory, export_atif, round_trajectory
from evoround.reports._browser import PageResult, find_chromium, open_page
from evoround.reports._compare import CompareError, compare_jobs, compare_tables
from evoround.reports._compliance import compute_compliance
from evoround.reports._export import FORMATS as EXPORT_FORMATS
from evoround.reports._export import ExportError, ExportResult, export_job
from evoround.reports._html import default_html_path, render_html, write_html_report
from evoround.reports._paper import FigureExportError, write_figures
from evoround.reports._paper import leaderboard_table as leaderboard_latex_or_markdown
from evoround.reports._readers import NO_CHECKS, NOT_RECORDED
from evoround.reports._style import PALETTE, agent_colours
from evoround.reports._text import (
    compliance_tables,
    job_json,
    leaderboard_table,
    pct,
    print_report,
)
from evoround.reports._uncertainty import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Interval,
    JobUncertainty,
    PairedComparison,
    PairedDiff,
    bootstrap,
    headline_stats,
    job_uncertainty,
    paired_bootstrap,
    report_stats,
)
from evoround.reports._viewer import BY_NAME, ViewerURLError, job_link, round_link, viewer_base

__all__ = [
    "EXPORT_FORMATS",
    "ExportError",
    "ExportResult",
    "AtifTrajectory",
    "export_atif",
    "round_trajectory",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "FigureExportError",
    "Interval",
    "JobUncertainty",
    "NOT_RECORDED",
    "NO_CHECKS",
    "PALETTE",
    "PairedComparison",
    "PairedDiff",
    "agent_colours",
    "bootstrap",
    "headline_stats",
    "job_uncertainty",
    "leaderboard_latex_or_markdown",
    "paired_bootstrap",
    "report_stats",
    "write_figures",
    "PageResult",
    "build_report",
    "CompareError",
    "compare_jobs",
    "compare_tables",
    "compliance_tables",
    "compute_compliance",
    "default_html_path",
    "export_job",
    "find_chromium",
    "job_json",
    "leaderboard_table",
    "open_page",
    "pct",
    "print_report",
    "render_html",
    "write_html_report",
    "BY_NAME",
    "ViewerURLError",
    "job_link",
    "round_link",
    "viewer_base",
]
