"""report.html links into a running viewer only when told where one runs, and every link
it writes opens a page of that viewer (the round it names)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evoround.reports import ViewerURLError, render_html, viewer_base, write_html_report
from evoround.reports._analysis import build_report
from evoround.results import load_job
from evoround.view import JobIndex, ViewServer
from tests.helpers import evoround_cli
from tests.view.jobs import job_config, record, synthetic_job, write_round
from tests.view.test_view import get

_HREF = re.compile(r'<a class="viewer" href="([^"]+)"')


@pytest.fixture
def two_jobs(tmp_path: Path) -> list[Path]:
    a = synthetic_job(tmp_path, "alpha", tasks=2, rounds=2, events=3)
    b = synthetic_job(tmp_path, "beta & <b>", tasks=1, rounds=2, events=3)
    return [a, b]


def test_without_a_viewer_the_report_links_nowhere_outside(two_jobs: list[Path]) -> None:
    html = render_html(build_report([load_job(two_jobs[0])], trajectories=True), inline_js="")
    assert 'class="viewer"' not in html and "/by-name/" not in html
    assert 'id="viewer-note"' not in html


def test_every_viewer_link_of_the_report_opens_its_page(
    tmp_path: Path, two_jobs: list[Path]
) -> None:
    views = [load_job(p) for p in two_jobs]
    with ViewServer(JobIndex(list(reversed(two_jobs)))) as server:  # positions differ
        out = write_html_report(views, tmp_path / "report.html", viewer=server.url)
        html = out.read_text()
        links = [h.replace("&amp;", "&") for h in _HREF.findall(html)]
        rounds = [h for h in links if "/round/" in h]
        assert len(rounds) == 2 * 2 * 2 + 1 * 2 * 2  # every recorded round, MT and SR
        assert all(h.startswith(server.url + "by-name/") for h in links)
        for href in sorted(set(links)):
            code, body, _ = get(server, href[len(server.url) :])
            assert code == 200, href
            if "/round/" in href:
                task, mode, attempt, rnd = href.rsplit("/", 4)[1:]
                assert f"{task} · {mode} attempt {attempt} · round {rnd} of" in body, href
        assert "beta%20%26%20%3Cb%3E" in html  # a job name is one quoted URL segment
    assert 'id="viewer-note"' in html


def test_a_name_the_viewer_does_not_serve_is_not_found(two_jobs: list[Path]) -> None:
    with ViewServer(JobIndex(two_jobs[:1])) as server:
        assert get(server, "/by-name/alpha")[0] == 200
        code, body, _ = get(server, "/by-name/nobody/round/t000/mt/1/1")
        assert code == 404 and "no job named" in body
        assert get(server, "/by-name/..%2F..%2Fetc")[0] == 404
        assert get(server, "/by-name/alpha/round/t000/mt/1/9")[0] == 404


@pytest.mark.parametrize(
    "url",
    ["javascript:alert(1)", "file:///etc/passwd", "localhost:8765", "http://", "http://h/?q=1"],
)
def test_only_an_http_address_is_a_viewer(url: str) -> None:
    with pytest.raises(ViewerURLError, match="viewer address"):
        viewer_base(url)


def test_viewer_base_keeps_a_prefix() -> None:
    assert viewer_base("https://lab.example/view/") == "https://lab.example/view"
    assert viewer_base(" http://localhost:8765/ ") == "http://localhost:8765"


def test_report_cli_viewer_option_and_setting(tmp_path: Path) -> None:
    job = tmp_path / "j"
    job.mkdir()
    (job / "job.json").write_text(job_config("j", {"t": 1}).model_dump_json())
    write_round(job, record("j", "t", "mt", 1, 1, 1))
    r = evoround_cli("report", str(job), "--viewer", "javascript:alert(1)")
    assert r.returncode == 2 and "--viewer: 'javascript:alert(1)': not a viewer address" in r.stderr
    assert "Traceback" not in r.stderr and not (job / "report.html").exists()
    r = evoround_cli("report", str(job), env={"EVOROUND_VIEWER_URL": "ftp://x"})
    assert r.returncode == 2 and "EVOROUND_VIEWER_URL: 'ftp://x'" in r.stderr
    r = evoround_cli("report", str(job), env={"EVOROUND_VIEWER_URL": "http://box:9/"})
    assert r.returncode == 0, r.stderr
    assert 'href="http://box:9/by-name/j/round/t/mt/1/1"' in (job / "report.html").read_text()
    r = evoround_cli("report", str(job), "--viewer", "http://other:1")
    assert r.returncode == 0, r.stderr
    assert 'href="http://other:1/by-name/j"' in (job / "report.html").read_text()


def test_a_run_with_a_bad_viewer_setting_warns_and_links_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from evoround.cli._report import viewer_setting

    monkeypatch.setenv("EVOROUND_VIEWER_URL", "javascript:alert(1)")
    assert viewer_setting() is None
    (line,) = capsys.readouterr().err.splitlines()  # one line
    assert line.startswith("warning: EVOROUND_VIEWER_URL: 'javascript:alert(1)': not a viewer")
    monkeypatch.setenv("EVOROUND_VIEWER_URL", "http://localhost:8765/")
    assert viewer_setting() == "http://localhost:8765"
    monkeypatch.delenv("EVOROUND_VIEWER_URL")
    assert viewer_setting() is None
