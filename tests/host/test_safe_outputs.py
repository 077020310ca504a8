"""Outputs cannot be redirected, and belong to the person who ran edgeprof.

A link (or a FIFO, or a hard link) planted where edgeprof writes is one error line, exit 2,
and nothing is written anywhere: not through it, not beside it, no workload started.  Under
sudo (``SUDO_UID``/``SUDO_GID`` set for the edgeprof started here; 65534 is ``nobody`` and
``nogroup`` on Debian) every directory and file edgeprof creates belongs to that user with
ordinary modes; ``--as-root`` keeps root's.  The suite runs as root, like edgeprof usually does.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import require
from tests.host.test_load import TEMPLATE as LOAD_TEMPLATE

PY = sys.executable
REPO = Path(__file__).resolve().parents[2]
NOBODY = 65534
# Left out of the cgroup v2 guest: what is tested is edgeprof's own file code
# (edgeprof/outfiles.py), the same whatever the cgroup version, and under TCG these 24 tests
# took 340 s of the 6.12 guest's 987 s (a fresh-clone CI, 2026-11-26).
pytestmark = pytest.mark.not_in_vm
SUDO = {"SUDO_UID": str(NOBODY), "SUDO_GID": str(NOBODY), "SUDO_USER": "nobody"}
PRECIOUS = "precious\n"


@pytest.fixture(autouse=True)
def _root(mechanism: str) -> None:
    require(os.geteuid() == 0, "planting other users' links and handing files over needs root")


@pytest.fixture
def base() -> Iterator[Path]:
    """A directory every user can reach: pytest's tmp_path is under a 0700 directory of
    root's, where a workload dropped to nobody could not even start."""
    d = Path(tempfile.mkdtemp(prefix="edgeprof-outputs-"))
    d.chmod(0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d)


def ep(*args: str, cwd: Path, sudo: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), **(SUDO if sudo else {})}
    return subprocess.run(
        [PY, "-m", "edgeprof", *args], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip


def one_error(p: subprocess.CompletedProcess[str], *words: str) -> None:
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("edgeprof: error"), p.stderr
    for w in words:
        assert w in p.stderr, p.stderr


def victim(base: Path) -> Path:
    v = base / "victim"
    v.write_text(PRECIOUS)
    return v


def plant(kind: str, at: Path, target: Path) -> None:
    at.parent.mkdir(parents=True, exist_ok=True)
    if kind == "symlink":
        at.symlink_to(target)
    elif kind == "hardlink":
        os.link(target, at)
    else:
        os.mkfifo(at)


TEMPLATE = LOAD_TEMPLATE.format(python=PY)
"""The load test's env.template: OUTPUTFILE=summary.txt."""

RAN = "touch ran"
"""The workload: it leaves ``ran`` in its directory, so a refused run shows it never started."""


@pytest.mark.parametrize(
    ("name", "kind", "words"),
    [
        ("samples.csv", "symlink", "it is a link"),
        ("result.json", "symlink", "it is a link"),
        ("samples.csv", "hardlink", "2 hard links"),
        ("samples.csv", "fifo", "not a plain file"),
    ],
)
def test_a_planted_file_in_out_is_refused_before_the_run(
    base: Path, name: str, kind: str, words: str
) -> None:
    v = victim(base)
    plant(kind, base / "o" / name, v)
    p = ep("run", "--out", "o", "--", "sh", "-c", RAN, cwd=base)
    one_error(p, "o/" + name, words)
    assert v.read_text() == PRECIOUS and not (base / "ran").exists()
    assert sorted(c.name for c in (base / "o").iterdir()) == [name]  # nothing beside it


def test_a_link_planted_during_the_run_is_not_written_through(base: Path) -> None:
    """After the checks: the workload itself (root here) replaces result.json's name with a
    link.  The run is measured, the file is refused at the rename, the target is intact."""
    v = victim(base)
    script = f"mkdir -p o && ln -s {v} o/result.json"
    p = ep("run", "--out", "o", "--", "sh", "-c", script, cwd=base)
    *table, error = p.stderr.splitlines()  # the measured run's figures, then the error
    assert p.returncode == 2 and table[0] == "Final Usage Stats", p.stderr
    assert error.startswith("edgeprof: error: ") and "could not be written" in error
    assert "it is a link" in error and "the run ended (exited 0) but " in error
    assert v.read_text() == PRECIOUS
    assert (base / "o" / "result.json").is_symlink()
    assert [c.name for c in (base / "o").iterdir() if c.name.endswith(".tmp")] == []


def test_a_link_in_a_later_runs_directory_stops_the_sweep_before_its_first_run(
    base: Path,
) -> None:
    v = victim(base)
    plant("symlink", base / "o" / "b" / "1" / "samples.csv", v)
    p = ep("run", "-m", "a,b", "--out", "o", "--", "sh", "-c", RAN, cwd=base)
    one_error(p, "o/b/1/samples.csv", "it is a link")
    assert v.read_text() == PRECIOUS and not (base / "ran").exists()
    assert not (base / "o" / "a").exists()


def test_another_users_directory_link_is_not_followed(base: Path) -> None:
    """A run's directory replaced by a link of nobody's to a directory of root's: refused
    (the rule of the kernel's fs.protected_symlinks); a link of root's own is followed."""
    elsewhere = base / "elsewhere"
    elsewhere.mkdir()
    (base / "o").mkdir()
    (base / "o" / "a").symlink_to(elsewhere)
    os.lchown(base / "o" / "a", NOBODY, NOBODY)
    p = ep("run", "-m", "a,b", "--out", "o", "--", "sh", "-c", RAN, cwd=base)
    one_error(p, "a is a link owned by uid 65534")
    assert list(elsewhere.iterdir()) == [] and not (base / "ran").exists()

    os.lchown(base / "o" / "a", 0, 0)
    p = ep("run", "-m", "a,b", "--out", "o", "--", "sh", "-c", "true", cwd=base)
    assert p.returncode == 0, p.stderr
    assert (elsewhere / "1" / "result.json").is_file()


def _saved_run(base: Path) -> Path:
    p = ep("run", "--out", "saved", "--", "true", cwd=base)
    assert p.returncode == 0, p.stderr
    return base / "saved" / "result.json"


# Each: the command line (given the base directory) and the file it names, planted as a link.
END_FILES: dict[str, tuple[Callable[[Path], list[str]], str]] = {
    "run --markdown": (lambda b: ["run", "--markdown", "t.md", "--", "sh", "-c", RAN], "t.md"),
    "run --summary": (lambda b: ["run", "--summary", "s.md", "--", "sh", "-c", RAN], "s.md"),
    "run --junit": (lambda b: ["run", "--junit", "j.xml", "--", "sh", "-c", RAN], "j.xml"),
    "report --markdown": (lambda b: ["report", str(_saved_run(b)), "--markdown", "r.md"], "r.md"),
    "report --out": (lambda b: ["report", str(_saved_run(b)), "--out", "x"], "x/runs.csv"),
    "fit --out": (lambda b: ["fit", "--out", "f", "--", "sh", "-c", RAN], "f/fit.json"),
    "bench --out": (lambda b: ["bench", "w.py:f", "--out", "bo", "--iterations", "2"],
                    "bo/bs1/samples.csv"),
    "env.template OUTPUTFILE": (
        lambda b: ["run", "--backend", "cgroup", "-e", "env.template", "-m", "m1"], "summary.txt"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(END_FILES))
def test_a_link_at_any_file_edgeprof_names_is_refused_before_the_work(
    base: Path, case: str
) -> None:
    cmd, name = END_FILES[case]
    (base / "w.py").write_text("load = int\ndef f(batch):\n    open('ran', 'w').close()\n")
    (base / "app").mkdir()
    (base / "app" / "work.py").write_text("open('../ran', 'w').close()\n")
    (base / "env.template").write_text(TEMPLATE)
    args = cmd(base)
    v = victim(base)
    plant("symlink", base / name, v)
    p = ep(*args, cwd=base)
    one_error(p, name, "it is a link")
    assert v.read_text() == PRECIOUS and not (base / "ran").exists()


def _models_run(b: Path) -> list[str]:
    return ["run", "-m", "a,b", "--repeat", "2", "--out", "o", "--markdown", "t.md",
            "--summary", "s.md", "--junit", "j.xml", "--", "sh", "-c", "true"]  # fmt: skip


def _calibrate(b: Path) -> list[str]:
    """Three profiled models and a device that takes twice their time, then calibrate."""
    prof = ep("run", "-m", "a,b,c", "--out", "prof", "--as-root", "--", PY, "-c",
              "import sys, time\nt = time.process_time()\n"
              "while time.process_time() - t < 0.01 * ord(sys.argv[1][0]) / 97: pass",
              cwd=b)  # fmt: skip
    assert prof.returncode == 0, prof.stderr
    (b / "device.csv").write_text("model,runtime_ms\na,40\nb,42\nc,44\n")
    return ["calibrate", "--device", "board", "--measurements", "device.csv", "prof",
            "--out", "board.yml", "--plot", "board.png"]  # fmt: skip


# Each command under sudo, and the paths it creates (relative to the base directory).
OWNED: dict[str, tuple[Callable[[Path], list[str]], list[str]]] = {
    "run": (lambda b: ["run", "--out", "o/deep", "--", "true"], ["o", "o/deep"]),
    "model list": (_models_run, ["o", "t.md", "s.md", "j.xml"]),
    "sweep": (lambda b: ["run", "--memory", "256m,512m", "--out", "o", "--", "true"], ["o"]),
    "env.template": (
        lambda b: ["run", "--backend", "cgroup", "-e", "env.template", "-m", "m1.onnx,m2.onnx",
                   "--out", "o"],
        ["o", "summary.txt", "m1_summary.txt", "m2_summary.txt"],
    ),
    "calibrate": (_calibrate, ["board.yml", "board.png"]),
    "layers": (
        lambda b: ["layers", "profile", "w.py:net", "--input-shape", "4", "--iterations", "2",
                   "--warmup", "0", "--output", "p.yml"],
        ["p.yml"],
    ),
    "bench": (lambda b: ["bench", "w.py:f", "--iterations", "3", "--out", "bo"], ["bo"]),
    "report": (
        lambda b: ["report", str(_saved_run(b)), "--out", "rep", "--plots", "rep/plots"],
        ["rep", "rep/plots"],
    ),
}  # fmt: skip

W_PY = """\
def load(batch_size):
    return batch_size


def f(batch):
    sum(range(1000))


def net():
    import torch

    return torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
"""


def _created(base: Path, roots: list[str]) -> list[Path]:
    paths = []
    for r in roots:
        p = base / r
        assert p.exists(), f"{r} was not written"
        paths.append(p)
        if p.is_dir():
            paths += sorted(p.rglob("*"))
    return paths


@pytest.mark.parametrize("case", sorted(OWNED))
def test_under_sudo_every_output_belongs_to_the_invoking_user(base: Path, case: str) -> None:
    if case == "layers":
        require(_has_torch(), "edgeprof layers needs torch")
    cmd, roots = OWNED[case]
    (base / "w.py").write_text(W_PY)
    (base / "app").mkdir()
    (base / "app" / "work.sh").write_text("true\n")
    # The workload runs as nobody, who may not reach this checkout's interpreter: sh.
    sh = TEMPLATE.replace(f"COMMAND={PY}", "COMMAND=/bin/sh").replace("work.py", "work.sh")
    (base / "env.template").write_text(sh)
    args = cmd(base)
    p = ep(*args, cwd=base, sudo=True)
    assert p.returncode == 0, p.stderr
    mask = os.umask(0)
    os.umask(mask)
    created = _created(base, roots)
    assert len(created) > len(roots) or case not in ("run", "model list", "sweep", "bench")
    for path in created:
        st = path.lstat()
        assert (st.st_uid, st.st_gid) == (NOBODY, NOBODY), (path, st.st_uid, st.st_gid)
        want = (0o755 if stat.S_ISDIR(st.st_mode) else 0o644) & ~mask
        assert stat.S_IMODE(st.st_mode) == want, (path, oct(st.st_mode))


def test_as_root_keeps_roots_outputs(base: Path) -> None:
    p = ep("run", "--as-root", "--out", "o", "--markdown", "t.md", "--", "true", cwd=base,
           sudo=True)  # fmt: skip
    assert p.returncode == 0, p.stderr
    for path in _created(base, ["o", "t.md"]):
        assert (path.lstat().st_uid, path.lstat().st_gid) == (0, 0), path


def _has_torch() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None
