"""Links from report.html into a running ``evoround view``.

report.html is a file to share: it cannot know whether a viewer runs, or where. So it
links into one only when told its address (``evoround report --viewer URL`` or the
``EVOROUND_VIEWER_URL`` setting); without it the report stays self-contained, with no
link that could lead nowhere.

The viewer names jobs by their position among the jobs it serves, which a report cannot
know; these links name a job by its folder name instead (``/by-name/JOB/...``), which the
viewer resolves among the jobs it was given. The URL shape is defined here, below the
viewer, so the report and the viewer cannot disagree about it.
"""

from __future__ import annotations

from urllib.parse import quote, urlsplit

BY_NAME = "/by-name/"
"""The viewer's path prefix for jobs named by folder name."""


class ViewerURLError(ValueError):
    """A viewer address that is not an http(s) URL (one line naming it)."""


def viewer_base(url: str) -> str:
    """``url`` checked and without its trailing slash: ``http(s)://host[:port][/prefix]``.

    Only http and https: a link is written into every cell of the report, so a
    ``javascript:`` or ``file:`` address must not get there."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ViewerURLError(
            f"{url!r}: not a viewer address (give http://HOST:PORT/ where evoround view runs)"
        )
    if parts.query or parts.fragment:
        raise ViewerURLError(f"{url!r}: a viewer address has no ?query or #fragment")
    return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"


def _seg(text: str) -> str:
    return quote(text, safe="")


def job_link(base: str, job: str) -> str:
    """The viewer's grid of the job whose folder is named ``job``."""
    return f"{base}{BY_NAME}{_seg(job)}"


def round_link(base: str, job: str, task: str, mode: str, attempt: int, rnd: int) -> str:
    """The viewer's page of one round of the job whose folder is named ``job``."""
    return f"{job_link(base, job)}/round/{_seg(task)}/{_seg(mode)}/{int(attempt)}/{int(rnd)}"
