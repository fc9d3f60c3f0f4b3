"""Figures and tables for a paper: every chart as SVG and PDF, the leaderboard as LaTeX or
Markdown with its intervals.

Static export goes through plotly's own exporter (kaleido >= 1), which drives a headless
Chrome/Chromium found on the machine (``EVOROUND_CHROMIUM``, else Chromium on PATH): no
network, no browser download. The same figure specs as report.html are drawn, at a fixed
print size, so a printed chart and the page agree.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from evoround.reports._browser import find_chromium

PRINT_WIDTH, PRINT_HEIGHT = 900, 450
"""Pixels at scale 1 (SVG/PDF are vector: this fixes proportions and font size, not detail)."""

TABLE_COLUMNS = (
    ("MT@k", "MT@k"),
    ("SR", "SR"),
    ("Gap", "Gap"),
    ("Comp", "Comp"),
    ("CSR", "CSR"),
    ("ISR", "ISR"),
)
"""(leaderboard key, column heading) of the exported leaderboard table."""


class FigureExportError(RuntimeError):
    """Static export is impossible here (no kaleido, no Chromium): one line says why."""


def write_figures(figures: dict[str, dict[str, Any]], out_dir: Path) -> list[Path]:
    """Write every available figure as ``<name>.svg`` and ``<name>.pdf``; returns the paths.

    Unavailable figures (nothing recorded) are listed in ``<out_dir>/README.txt`` with their
    note instead of being drawn as empty axes."""
    try:
        import kaleido  # noqa: F401
        import plotly.graph_objects as go
        import plotly.io as pio
    except ImportError as e:  # pragma: no cover - kaleido is a dependency
        raise FigureExportError(f"static figure export needs kaleido>=1 ({e})") from None
    exe = find_chromium()
    if exe is None:
        raise FigureExportError("static figure export needs Chromium (apt-get install -y chromium)")
    os.environ.setdefault("BROWSER_PATH", exe)  # choreographer's way to be told the browser
    out_dir.mkdir(parents=True, exist_ok=True)
    figs: list[Any] = []
    paths: list[Path] = []
    notes = []
    for name, fig in figures.items():
        if not fig.get("available") or not fig.get("plotly"):
            notes.append(f"{name}: not drawn: {fig.get('note') or 'nothing to show'}")
            continue
        spec = fig["plotly"]
        layout = {**spec["layout"], "width": PRINT_WIDTH, "height": PRINT_HEIGHT}
        g = go.Figure(data=spec["data"], layout=layout)
        for ext in ("svg", "pdf"):
            figs.append(g)
            paths.append(out_dir / f"{name}.{ext}")
    if figs:
        try:
            pio.write_images(figs, paths)
        except Exception as e:  # kaleido reports a missing/failed browser in many ways
            raise FigureExportError(
                f"static figure export failed: {type(e).__name__}: {e}"
            ) from None
    (out_dir / "README.txt").write_text(
        "Figures of the evoround report, SVG and PDF.\n" + "".join(f"{n}\n" for n in notes),
        encoding="utf-8",
    )
    return paths


# ---- the leaderboard table ---------------------------------------------------------------


def _num(v: float | None) -> str:
    return "--" if v is None else f"{100 * v:.1f}"


def _cell(row: dict[str, Any], key: str, *, latex: bool) -> str:
    est = row.get(key)
    if not isinstance(est, float | int) or isinstance(est, bool):
        return "n/r" if est is not None else "--"
    iv = (row.get("intervals") or {}).get(key) or {}
    lo, hi = iv.get("lo"), iv.get("hi")
    if lo is None or hi is None:
        return _num(est)
    if latex:
        return f"{_num(est)} {{\\scriptsize [{_num(lo)}, {_num(hi)}]}}"
    return f"{_num(est)} [{_num(lo)}, {_num(hi)}]"


LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def latex_escape(text: str) -> str:
    """Agent and model names are free text: every LaTeX special character is escaped."""
    return "".join(LATEX_SPECIAL.get(ch, ch) for ch in text)


def _md_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def leaderboard_table(data: dict[str, Any], fmt: str) -> str:
    """The leaderboard with 95% intervals, as a LaTeX ``tabular`` or a Markdown table."""
    rows = data["leaderboard"]
    jobs = {j["job"]: j for j in data["jobs"]}
    first: dict[str, Any] = next(iter(jobs.values()), {})
    some = first.get("uncertainty") or {}
    caption = (
        "Percent; in brackets the 95\\% percentile bootstrap interval over tasks"
        f" ({some.get('resamples', 0)} resamples, seed {some.get('seed', '--')})."
        " n/r: not recorded."
    )
    head = ["Agent", "Model", "k", "Tasks", *(h for _, h in TABLE_COLUMNS)]
    body = [
        [
            str(r["agent"]),
            str(r.get("model") or "--"),
            str(r["k"]),
            str(r["tasks"]),
            *(_cell(r, key, latex=fmt == "latex") for key, _ in TABLE_COLUMNS),
        ]
        for r in rows
    ]
    if fmt == "markdown":
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] * len(head)) + "|"]
        lines += ["| " + " | ".join(_md_escape(c) for c in row) + " |" for row in body]
        return "\n".join(lines) + "\n\n" + caption.replace("\\%", "%") + "\n"
    if fmt != "latex":
        raise ValueError(f"--table: unknown format {fmt!r} (latex | markdown)")
    spec = "ll" + "r" * (len(head) - 2)
    out = [
        "% evoround leaderboard; needs no package beyond LaTeX's own",
        "\\begin{table}[t]",
        "\\centering",
        f"\\begin{{tabular}}{{{spec}}}",
        "\\hline",
        " & ".join(latex_escape(h) for h in head) + " \\\\",
        "\\hline",
    ]
    for row in body:
        cells = [latex_escape(c) for c in row[:4]] + row[4:]  # numbers are made here, not read
        out.append(" & ".join(cells) + " \\\\")
    out += ["\\hline", "\\end{tabular}", f"\\caption{{{caption}}}", "\\end{table}"]
    return "\n".join(out) + "\n"
