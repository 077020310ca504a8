"""Installation as a user gets it: the sdist builds a wheel with the compiled helper, and that
wheel installs into a clean venv (not editable) and runs; a failed compile of the helper
still gives a working edgeprof, which says it reads counters in pure Python."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import edgeprof
from tests.conftest import require

REPO = Path(__file__).resolve().parents[2]
PIP = [sys.executable, "-m", "pip"]


def _source_copy(tmp_path: Path) -> Path:
    """The checkout's files, without a build/, egg-info, venv or compiled helper of its own."""
    src = tmp_path / "src"
    shutil.copytree(
        REPO,
        src,
        ignore=shutil.ignore_patterns(
            ".venv", ".git", "build", "*.egg-info", "__pycache__", "*.so", ".test-results",
            ".demo", ".mypy_cache", ".ruff_cache",
        ),
    )  # fmt: skip
    return src


def _run(argv: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600, check=False)
    assert p.returncode == 0, (argv, p.stdout[-2000:], p.stderr[-2000:])
    return p


def test_the_sdist_builds_a_wheel_that_runs_from_a_clean_venv(tmp_path: Path) -> None:
    require(os.geteuid() == 0, "the installed edgeprof measures a run in real cgroups: root")
    src, dist, wheels = _source_copy(tmp_path), tmp_path / "dist", tmp_path / "wheels"
    # The sdist as a release builds it: setuptools' PEP 517 hook, in the source tree.
    build = "import sys; from setuptools import build_meta as b; print(b.build_sdist(sys.argv[1]))"
    sdist = dist / _run([sys.executable, "-c", build, str(dist)], cwd=src).stdout.split()[-1]
    assert sdist.name == f"edgeprof-{edgeprof.__version__}.tar.gz"
    # The wheel from the sdist alone: what it lacks (the helper's C source), the wheel lacks.
    _run([*PIP, "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(sdist)])
    (wheel,) = wheels.glob("edgeprof-*.whl")
    # One wheel for CPython 3.10 and later: the helper uses the limited API only (cffi's
    # out-of-line API mode), so the wheel says so (setup.py's py_limited_api), not cp311-cp311.
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    assert wheel.name == f"edgeprof-{edgeprof.__version__}-cp310-abi3-{platform}.whl"
    names = zipfile.ZipFile(wheel).namelist()
    helpers = [n for n in names if n.startswith("edgeprof/backends/_cgstat") and n.endswith(".so")]
    assert helpers == ["edgeprof/backends/_cgstat.abi3.so"]
    schemas = {f"edgeprof/{n}.schema.json" for n in ("result", "fit", "predictions")}
    assert {"edgeprof/devices.yml", "edgeprof/py.typed", *schemas} <= set(names)
    assert not [n for n in names if n.startswith(("tests/", "native/", "benchmarks/"))]
    assert [n for n in names if n.endswith(".dist-info/licenses/LICENSE")], names
    # A clean venv: the wheel and its declared dependencies only (from the index).
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    py = str(venv / "bin" / "python")
    _run([*PIP, "--python", py, "install", "-q", "--retries", "5", str(wheel)])
    where = tmp_path / "elsewhere"  # not the checkout: nothing of it on the path
    where.mkdir()
    version = _run([str(venv / "bin" / "edgeprof"), "--version"], cwd=where).stdout
    assert version == f"edgeprof {edgeprof.__version__}\n"
    code = (
        "import edgeprof, importlib.metadata as m; print(edgeprof.__file__, m.version('edgeprof'))"
    )
    file, meta = _run([py, "-c", code], cwd=where).stdout.split()
    assert Path(file).is_relative_to(venv) and Path(file).parent.parent.name == "site-packages"
    assert meta == edgeprof.__version__
    doctor = subprocess.run(
        [py, "-m", "edgeprof", "doctor"], cwd=where, capture_output=True, text=True, timeout=120
    )
    assert "counter reader: native helper" in doctor.stdout, doctor.stdout
    out = tmp_path / "out"
    run = _run([py, "-m", "edgeprof", "run", "--out", str(out), "--", "/bin/true"], cwd=where)
    result = json.loads((out / "result.json").read_text())
    assert result["exit_code"] == 0 and result["edgeprof_version"] == edgeprof.__version__, (
        run.stdout
    )


def test_the_sdist_holds_the_tests_docs_and_license_without_build_outputs(tmp_path: Path) -> None:
    """A packager (Debian, conda-forge) builds and runs the tests from the sdist alone: it must
    hold the test suite and what the tests read, the docs, the licence and the changelog (the
    sdist held edgeprof/, native/, README.md and LICENSE only: 0 of tests/' 263 files), and none
    of a working tree's build outputs."""
    src = _source_copy(tmp_path)
    # What a working tree holds after `make setup` and a test run, planted so that the
    # exclusions are seen to work (_source_copy has left the real ones out).
    planted = [
        "edgeprof/backends/_cgstat.abi3.so",  # the compiled helper
        "native/_cgstat.c",  # cffi's generated C
        "tests/unit/__pycache__/test_units.cpython-311.pyc",
    ]
    for name in planted:
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_bytes(b"build output")
    build = "import sys; from setuptools import build_meta as b; print(b.build_sdist(sys.argv[1]))"
    dist = tmp_path / "dist"
    sdist = dist / _run([sys.executable, "-c", build, str(dist)], cwd=src).stdout.split()[-1]
    top = f"edgeprof-{edgeprof.__version__}/"
    with tarfile.open(sdist) as tar:
        names = {m.name.removeprefix(top) for m in tar.getmembers() if m.isfile()}
    wanted = {"LICENSE", "CHANGELOG.md", "README.md", "Makefile", "mkdocs.yml", "action.yml"}
    wanted |= {"pyproject.toml", "setup.py", "MANIFEST.in"}
    for tree in ("tests", "docs", "examples", "benchmarks", "integrations", "native"):
        files = [p for p in (src / tree).rglob("*") if p.is_file()]
        assert files, tree
        wanted |= {p.relative_to(src).as_posix() for p in files if p.suffix not in (".so", ".pyc")}
    wanted -= set(planted)
    assert sorted(wanted - names) == []
    assert sorted(set(planted) & names) == []
    assert not [n for n in names if n.endswith((".so", ".pyc")) or "__pycache__" in n]


def test_install_without_a_compiler_falls_back_to_pure_python(tmp_path: Path) -> None:
    # Build from a copy so that no build/ or egg-info of the checkout takes part.
    src = _source_copy(tmp_path)
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
    assert "edgeprof/py.typed" in names  # PEP 561: else a user's type checker skips the hints
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
    doctor = subprocess.run(
        [sys.executable, "-S", "-m", "edgeprof", "doctor"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(map(str, path[:2]))},
        cwd=tmp_path,
    )
    assert "counter reader: pure-Python os.pread (native helper not built)" in doctor.stdout


def test_native_helper_is_built_in_the_test_install() -> None:
    """The suite itself must exercise the native path (make test installs with a compiler)."""
    import edgeprof.backends.cgroupfs as f

    assert f.NATIVE_AVAILABLE, "the cffi helper was not built: check gcc and python3-dev"
