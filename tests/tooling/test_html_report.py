"""The HTML report drawn by a real browser: Debian's headless Chromium (installed with apt
when missing, root only) renders the page of a real sweep; the test reads the page's text as
the browser laid it out (``--dump-dom``) and the pixels of its screenshot (charts drawn, the
verdict coloured), not only the HTML string."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require, require_module

REPO = Path(__file__).resolve().parents[2]
WORKLOAD = REPO / "examples" / "quickstart" / "infer.py"
BAR = (0x00, 0x72, 0xB2)  # edgeprof.report.svg.PALETTE[0]
FAIL_BADGE = (0xFB, 0xE4, 0xE4)  # .verdict.fail's background


def chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        require(os.geteuid() == 0, "headless Chromium is not installed and we are not root")
        from tests.apt import AptUnavailable, apt_install

        try:
            apt_install("chromium")
        except AptUnavailable as exc:
            require(False, f"cannot install Debian's chromium: {exc}")
        found = shutil.which("chromium")
    assert found is not None
    return found


def browser(*args: str) -> subprocess.CompletedProcess[str]:
    argv = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    return subprocess.run([*argv, *args], capture_output=True, text=True, timeout=120, check=True)


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report of a real sweep: 2 models × 2 runs, phases and iterations, a budget that
    one model breaches, samples on disk."""
    require(os.geteuid() == 0, "the sweep runs in real cgroups: root")
    tmp = tmp_path_factory.mktemp("html")
    html = tmp / "report.html"
    p = subprocess.run(
        [
            sys.executable, "-m", "edgeprof", "run", "--cpus", "1", "--memory", "256m",
            "--repeat", "2", "--out", str(tmp / "sweep"), "-m", "2,32",
            # Runs of ~0.1 s: read every 10 ms, each has an average memory (a run over
            # before its second reading has none, and its ranking no chart).
            "--interval", "0.01",
            "--max-peak-memory", "60m", "--html", str(html),
            "--", sys.executable, str(WORKLOAD), "--iterations", "5", "--batch",
        ],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )  # fmt: skip
    assert p.returncode == 3, p.stderr  # batch 32 breaches the 60 MiB budget (~88 MiB here)
    return html


def test_the_page_is_one_file_that_fetches_nothing(page: Path) -> None:
    text = page.read_text()
    assert not re.search(r"<(script|link|img|iframe)\b|\b(src|href)=|url\(", text)
    # The one URL is SVG's namespace, a name that nothing fetches.
    assert set(re.findall(r"https?://[^\s\"'<>]+", text)) == {"http://www.w3.org/2000/svg"}


def test_the_browser_lays_out_the_tables_and_verdicts(page: Path) -> None:
    dom = browser("--dump-dom", page.as_uri()).stdout
    text = re.sub(r"<[^>]+>", " ", dom)
    for heading in ("Results", "Phases", "Latency", "Statistics and rankings", "Budgets"):
        assert f"<h2>{heading}</h2>" in dom or f"<h3>{heading}" in dom, heading
    assert "1 of 2 budget checks failed" in text
    assert re.search(
        r"32\s+cpus=1, memory=256\.0MiB\s+peak memory\s+\S+MiB\s+60\.0MiB\s+✗ breach", text
    )
    assert "Ranking by wall time under cpus=1, memory=256.0MiB (smallest first)" in text
    # Each ranking's chart follows its table: 6 ranked metrics (throughput and latency p50
    # first: the runs report iterations), then CPU and memory in time.
    assert dom.count("<svg") == 8
    assert "CPU % of one core" in text and "Memory" in text


def test_the_screenshot_shows_the_charts_and_the_failed_verdict(page: Path, tmp_path: Path) -> None:
    image = require_module("PIL.Image", "plot")
    shot = tmp_path / "page.png"
    browser("--window-size=1200,4000", f"--screenshot={shot}", page.as_uri())
    with image.open(shot) as im:
        rgb = im.convert("RGB")
        assert rgb.size == (1200, 4000)
        colours = rgb.getcolors(maxcolors=1 << 20)
    assert colours is not None
    count = {c: n for n, c in colours}
    total = sum(count.values())
    white = count.get((255, 255, 255), 0)
    assert white < 0.97 * total  # something was drawn
    # The bars: 4 rankings × 2 models, at least 8 px high and some tens wide each.
    assert count.get(BAR, 0) > 8 * 8 * 30, count.get(BAR, 0)
    assert count.get(FAIL_BADGE, 0) > 500  # the red verdict badge at the top
