"""pyproject's ``private-backends`` import contract, run by ``lint-imports`` on a small tree:
it must break on a backend's private module imported from above, whatever that module is
called.  It had been a hand-made list of the 11 ``_`` modules that existed, and a new
``backends/_newthing.py`` imported from ``measure/`` passed ("3 kept, 0 broken")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import tomllib

from tests.conftest import require

REPO = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _contract() -> dict[str, object]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["id"] == "private-backends"]
    assert isinstance(contract, dict)
    return contract


def _toml(contract: dict[str, object]) -> str:
    # Its values are strings and lists of strings, which JSON writes as TOML reads them.
    head = ["[tool.importlinter]", 'root_package = "edgeprof"', "[[tool.importlinter.contracts]]"]
    return "\n".join([*head, *(f"{k} = {json.dumps(v)}" for k, v in contract.items())]) + "\n"


def _lint(tmp_path: Path, tick: str) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` with the real contract on a tree of a backend, its helpers, a private
    module named as no existing one is, and ``measure/tick.py`` holding ``tick``."""
    # Skipped where import-linter is not installed, but never in CI (tests.conftest.require).
    require(LINT_IMPORTS.exists(), "needs import-linter: pip install '.[test]'")
    files = {
        "edgeprof/__init__.py": "",
        "edgeprof/backends/__init__.py": "",
        "edgeprof/backends/_newthing.py": "X = 1\n",
        "edgeprof/backends/helpers.py": "from ._newthing import X\n",
        "edgeprof/measure/__init__.py": "",
        "edgeprof/measure/tick.py": tick,
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "pyproject.toml").write_text(_toml(_contract()))
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", "pyproject.toml", "--no-cache"],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_new_private_backend_module_imported_from_above_breaks_the_contract(
    tmp_path: Path,
) -> None:
    done = _lint(tmp_path, "from edgeprof.backends._newthing import X\n")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "edgeprof.measure.tick -> edgeprof.backends._newthing (l.1)" in done.stdout
    assert "Contracts: 0 kept, 1 broken." in done.stdout


def test_through_the_helpers_it_is_kept(tmp_path: Path) -> None:
    done = _lint(tmp_path, "from edgeprof.backends.helpers import X\n")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 1 kept, 0 broken." in done.stdout
