"""Installation: a failed compile of the native helper still gives a working edgeprof."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_install_without_a_compiler_falls_back_to_pure_python(tmp_path: Path) -> None:
    # Build from a copy so that no build/ or egg-info of the checkout takes part.
    src = tmp_path / "src"
    shutil.copytree(
        REPO,
        src,
        ignore=shutil.ignore_patterns(
            ".venv", ".git", "build", "*.egg-info", "__pycache__", "*.so", ".test-results"
        ),
    )
    wheels = tmp_path / "wheels"
    env = {**os.environ, "CC": "/bin/false"}  # every compile fails
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(wheels),
            str(src),
        ],
        check=True,
        env=env,
        capture_output=True,
    )
    (wheel,) = wheels.glob("edgeprof-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.endswith(".so")]
    assert "edgeprof/devices.yml" in names  # the shipped device catalog is package data
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    # -S: no site processing, so the checkout's editable install cannot shadow the wheel;
    # the dependencies come from this venv's site-packages, the scripted backend from the
    # checkout's tests (after the wheel on the path: its edgeprof is the wheel's).
    code = (
        "import edgeprof, edgeprof.backends.cgroupfs as f; from tests.fakes import FakeBackend; "
        "print(edgeprof.__file__); print(f.NATIVE_AVAILABLE); "
        "r = edgeprof.profile(['true'], backend=FakeBackend()); print(r.termination.value)"
    )
    path = [target, sysconfig.get_paths()["purelib"], REPO]
    out = subprocess.run(
        [sys.executable, "-S", "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(map(str, path))},
        cwd=tmp_path,
    ).stdout.split()
    assert out == [str(target / "edgeprof" / "__init__.py"), "False", "exited"]


def test_native_helper_is_built_in_the_test_install() -> None:
    """The suite itself must exercise the native path (make test installs with a compiler)."""
    import edgeprof.backends.cgroupfs as f

    assert f.NATIVE_AVAILABLE, "the cffi helper was not built: check gcc and python3-dev"
