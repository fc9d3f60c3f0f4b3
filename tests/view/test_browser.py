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
from tests.view.jobs import job_config, record, regression, synthetic_job, write_round

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
