"""The viewer in a real browser: headless Chromium from Debian's packages, driven by
Selenium through Debian's chromedriver (nothing is downloaded at run time).

Clicks the path a user takes (jobs -> grid -> a failed round -> its diff -> compare with
SR) and checks that hostile agent output renders as text and runs nothing. In CI
(``CI=true``) a missing browser or driver fails these tests; elsewhere they skip.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evoround.results import FileChange, RoundChanges
from evoround.view import JobIndex, ViewServer
from tests.conftest import in_ci
from tests.view.jobs import (
    hostile_names_job,
    job_config,
    record,
    regression,
    synthetic_job,
    write_round,
)

HOSTILE = '<img src=x onerror="document.title=\'pwned\'"><script>document.title="pwned"</script>'


def _chromium() -> tuple[str, str]:
    exe = next((shutil.which(n) for n in ("chromium", "chromium-browser") if shutil.which(n)), None)
    driver = shutil.which("chromedriver")
    if exe is None or driver is None:
        msg = "chromium not installed (apt-get install -y chromium chromium-driver)"
        if in_ci():
            pytest.fail(f"Chromium and chromedriver are required in CI: {msg}", pytrace=False)
        pytest.skip(msg)
    return exe, driver


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    exe, driver = _chromium()
    webdriver = pytest.importorskip("selenium.webdriver")
    opts = webdriver.ChromeOptions()
    opts.binary_location = exe
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        opts.add_argument(flag)
    b = webdriver.Chrome(options=opts, service=webdriver.ChromeService(executable_path=driver))
    b.set_page_load_timeout(60)
    yield b
    b.quit()


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("view")
    good = synthetic_job(root, "synth", tasks=2, rounds=3, events=5)
    bad = root / "hostile"
    bad.mkdir()
    (bad / "job.json").write_text(job_config("hostile", {"t000": 1}).model_dump_json())
    rec = record(
        "hostile", "t000", "mt", 1, 1, 1, passed=False, **regression("a.py", "t", HOSTILE, 1)
    )
    patch = f"--- /dev/null\n+++ b/{HOSTILE}\n@@ -0,0 +1 @@\n+{HOSTILE}\n"
    events = [{"type": "message", "role": "user", "content": HOSTILE}]
    ch = RoundChanges(added=[FileChange(path=HOSTILE, size=1)])
    write_round(bad, rec, events=events, changes=ch, patch=patch, checks=[])
    return [good, bad]


def test_click_through_to_a_regression_and_compare(browser: Any, jobs: list[Path]) -> None:
    from selenium.webdriver.common.by import By

    with ViewServer(JobIndex(jobs)) as server:
        browser.get(server.url)
        assert "Jobs" in browser.title
        browser.find_element(By.LINK_TEXT, "synth").click()
        failed = browser.find_elements(By.CSS_SELECTOR, "td.cell.failed a")
        assert len(failed) == 2  # the last MT round of each task
        failed[0].click()
        text = browser.find_element(By.TAG_NAME, "main").text
        assert "round 3 of 3" in text and "test_calc.py::test_f1" in text
        assert "+def f3():" in text  # the round's diff, rendered
        assert "rounds whose edits touched a file in its traceback" in text
        browser.find_element(By.PARTIAL_LINK_TEXT, "round 1").click()  # blame -> the edit
        assert "round 1 of 3" in browser.find_element(By.TAG_NAME, "h1").text
        browser.back()
        browser.find_element(By.PARTIAL_LINK_TEXT, "compare with SR").click()
        cols = browser.find_elements(By.CSS_SELECTOR, ".cols > div")
        assert len(cols) == 2 and "failed" in cols[0].text and "passed" in cols[1].text


def test_hostile_output_runs_nothing(browser: Any, jobs: list[Path]) -> None:
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    with ViewServer(JobIndex(jobs)) as server:
        for path in ("job/1", "job/1/round/t000/mt/1/1"):
            browser.get(server.url + path)
            assert browser.title != "pwned"
            with pytest.raises(NoAlertPresentException):
                browser.switch_to.alert.text  # noqa: B018 - raises when no alert is open
        main = browser.find_element(By.TAG_NAME, "main").text
        assert '<script>document.title="pwned"</script>' in main  # shown as text
        assert not browser.find_elements(By.CSS_SELECTOR, "main img, main script")


WIDTH = 1400
SHOTS_ENV = "VIEW_SHOTS"
"""A folder to copy the screenshots to, for a person to look at (unset: only tmp)."""


def _showcase(root: Path) -> Path:
    """A job whose round holds what a real agent round holds: coloured test output, unicode,
    model calls with and without figures, a check with evidence, a long diff line."""
    job = root / "showcase"
    job.mkdir()
    (job / "job.json").write_text(
        job_config("showcase", {"calc": 2}, agent="claude-code").model_dump_json()
    )
    for mode in ("mt", "sr"):
        write_round(job, record("showcase", "calc", mode, 1, 1, 2), checks=[])
    events = [
        {"type": "message", "role": "user", "content": "Add f2() — héllo ✓ 日本語 🚀"},
        {
            "type": "model_call",
            "name": "anthropic/claude-x",
            "usage": {"input_tokens": 5400, "output_tokens": 321},
            "arguments": {"status": "success", "duration_sec": 3.2, "cost_usd": 0.0215},
        },
        {"type": "tool_call", "name": "bash", "arguments": {"cmd": "pytest -q --color=yes"}},
        {
            "type": "command",
            "content": "\x1b[31mF\x1b[0m\x1b[32m.\x1b[0m\n\x1b[1m\x1b[31mFAILED\x1b[0m "
            "test_calc.py::test_f1 - assert 0 == 1\n\x1b[31m1 failed\x1b[0m, \x1b[32m1 passed\x1b[0m",
            "exit_code": 1,
        },
        {"type": "model_call", "name": "anthropic/claude-x", "arguments": {"status": "failure"}},
    ]
    checks = [
        {
            "id": "runs-tests",
            "result": "fail",
            "detail": "the agent did not run the tests after its last edit",
            "evidence": [{"kind": "command", "index": 3, "excerpt": "pytest -q --color=yes"}],
        }
    ]
    long = "x = " + " + ".join(f"value_{i}" for i in range(60))
    ch = RoundChanges(parent="snap-1", modified=[FileChange(path="calc.py", size=400)])
    patch = f"--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,3 @@\n def f1():\n-    return 1\n+    return 0\n+{long}\n"
    fails = regression("test_calc.py", "test_f1", "calc.py:2: in f1\nE  assert 0 == 1", 1)
    rec = record("showcase", "calc", "mt", 1, 2, 2, passed=False, **fails)
    write_round(job, rec, events=events, changes=ch, patch=patch, checks=checks)
    write_round(job, record("showcase", "calc", "sr", 1, 2, 2), changes=ch, patch=patch)
    return job


def _shoot(browser: Any, path: Path) -> dict[str, int]:
    """The page at 1,400 px wide and its full height, as a PNG; its widths measured."""
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {
            "width": WIDTH,
            "height": min(max(height, 600), 8000),
            "deviceScaleFactor": 1,
            "mobile": False,
        },
    )
    browser.save_screenshot(str(path))
    sizes: dict[str, int] = browser.execute_script(
        "return {inner: window.innerWidth, scroll: document.documentElement.scrollWidth,"
        " main: document.querySelector('main').scrollWidth,"
        " clipped: Array.from(document.querySelectorAll('main pre, main td'))"
        "   .filter(e => e.scrollWidth > e.clientWidth + 1).length}"
    )
    return sizes


def test_screenshots_of_each_page_at_1400px(browser: Any, tmp_path: Path) -> None:
    import os
    import shutil as sh

    from selenium.webdriver.common.by import By

    synth = synthetic_job(tmp_path, "synth", tasks=3, rounds=6, events=5)
    show = _showcase(tmp_path)
    pages = {
        "jobs": ("", ["Jobs", "synth", "showcase", "MT@k", "claude-code"]),
        "grid": ("job/0", ["t000", "t002", "r6", "6/6", "5/6", "attempts shown"]),
        "round": (
            "job/1/round/calc/mt/1/2",
            [
                "round 2 of 2",
                "test_calc.py::test_f1",
                "5,721 tokens (in 5,400, out 321) · $0.0215 · 3.20 s",
                "tokens not recorded · cost not recorded · latency not recorded",
                "FAILED test_calc.py::test_f1 - assert 0 == 1",
                "héllo ✓ 日本語 🚀",
                "runs-tests",
                "command #3: pytest -q --color=yes",
                "+    return 0",
            ],
        ),
        "compare": (
            "compare?a=1/calc/mt/1/2&b=1/calc/sr/1/2",
            ["Compare: calc round 2", "failed", "passed", "test_calc.py::test_f1"],
        ),
    }
    hostile = hostile_names_job(tmp_path)
    pages["hostile"] = (
        "job/2/round/t/mt/1/1",
        ["⟦U+202E⟧yp.exe␛[31m.py", 'src/"><svg onload=alert(1)>', "progress 100%", "FAILED"],
    )
    shots = os.environ.get(SHOTS_ENV)
    with ViewServer(JobIndex([synth, show, hostile])) as server:
        for name, (path, expect) in pages.items():
            browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
            browser.set_window_size(WIDTH, 900)
            browser.get(server.url + path)
            for details in browser.find_elements(By.CSS_SELECTOR, "details"):
                browser.execute_script("arguments[0].open = true", details)
            png = tmp_path / f"{name}.png"
            sizes = _shoot(browser, png)
            text = browser.find_element(By.TAG_NAME, "body").text
            for e in expect:
                assert e in text, (name, e)
            assert "\x1b" not in text and "[0m" not in text.replace("␛[0m", ""), name
            assert browser.title != "pwned" and "<svg" not in browser.page_source.split("<main>")[1]
            assert sizes["inner"] == WIDTH and sizes["scroll"] <= WIDTH, (name, sizes)
            assert sizes["clipped"] == 0, (name, sizes)  # no text hidden behind a scrollbar
            assert png.stat().st_size > 10_000, name  # a real picture, not a blank page
            if shots:
                Path(shots).mkdir(parents=True, exist_ok=True)
                sh.copy(png, Path(shots) / png.name)


def test_report_html_cell_leads_into_the_viewer(browser: Any, tmp_path: Path) -> None:
    """report.html written with --viewer: a failed cell opens its round's panel, whose
    "open in viewer" link opens that round in the running viewer."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from evoround.reports import write_html_report
    from evoround.results import load_job

    job = synthetic_job(tmp_path, "linked", tasks=2, rounds=3, events=3)
    with ViewServer(JobIndex([job])) as server:
        report = write_html_report([load_job(job)], tmp_path / "report.html", viewer=server.url)
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        browser.get(report.as_uri())
        WebDriverWait(browser, 60).until(
            lambda b: b.find_element(By.TAG_NAME, "body").get_attribute("data-js-errors") != "-1"
        )
        assert browser.find_element(By.TAG_NAME, "body").get_attribute("data-js-errors") == "0"
        cell = browser.find_elements(By.CSS_SELECTOR, "table.grid td.c-regression a")[0]
        cell.click()
        panel = browser.find_element(By.ID, cell.get_attribute("href").split("#")[1])
        assert panel.get_attribute("open") is not None
        panel.find_element(By.LINK_TEXT, "open in viewer").click()
        WebDriverWait(browser, 30).until(lambda b: b.current_url.startswith(server.url))
        assert browser.current_url.endswith("/by-name/linked/round/t000/mt/1/3")
        text = browser.find_element(By.TAG_NAME, "main").text
        assert "t000 · mt attempt 1 · round 3 of 3" in text and "+def f3():" in text


def test_a_recorded_round_shows_in_the_open_grid_within_about_1_s(
    browser: Any, tmp_path: Path
) -> None:
    """The grid of a running job (job.lock present) reloads itself; a round appended to
    results.jsonl appears without anyone touching the page. The target is under 2 s (the
    1 s reload period plus one page load); the bound leaves room for a loaded CI machine."""
    import time

    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By

    from tests.view.jobs import calc_change

    def shown() -> str:  # the page may be between two loads: no text yet
        try:
            return str(browser.find_element(By.TAG_NAME, "main").text)
        except WebDriverException:
            return ""

    job = synthetic_job(tmp_path, "live", tasks=1, rounds=3, events=1)
    (job / "job.lock").write_text("{}")
    with ViewServer(JobIndex([job])) as server:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        browser.get(server.url + "job/0")
        assert "t000" in shown() and "t009" not in shown()
        ch, patch = calc_change(1)
        t0 = time.monotonic()
        write_round(job, record("live", "t009", "mt", 1, 1, 3), changes=ch, patch=patch)
        while "t009" not in shown():
            assert time.monotonic() - t0 < 6, "the new round did not show within 6 s"
            time.sleep(0.05)
        seen = time.monotonic() - t0
    print(f"live update seen after {seen:.2f} s")
    assert seen < 4
