"""The workload's environment is the caller's: CPython's coerced LC_CTYPE is not passed on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from edgeprof import callerenv
from edgeprof.backends._process import Process
from edgeprof.callerenv import callers_environ, coerced_by_python, names_at_exec
from edgeprof.model import RunSpec


def test_names_at_exec_reads_the_kernels_block() -> None:
    raw = b"LANG=C\0PATH=/bin:/usr/bin\0EMPTY=\0A=b=c\0"
    assert names_at_exec(raw) == frozenset({"LANG", "PATH", "EMPTY", "A"})


def test_an_lc_ctype_absent_at_exec_is_the_coercions() -> None:
    env = {"LANG": "C", "LC_CTYPE": "C.UTF-8"}
    assert coerced_by_python(env, frozenset({"LANG"})) is True


def test_a_callers_own_lc_ctype_is_kept_whatever_its_value() -> None:
    env = {"LANG": "C", "LC_CTYPE": "C.UTF-8"}
    assert coerced_by_python(env, frozenset({"LANG", "LC_CTYPE"})) is False


def test_a_value_the_coercion_never_sets_is_never_taken_for_it() -> None:
    assert coerced_by_python({"LC_CTYPE": "de_DE.UTF-8"}, frozenset()) is False
    assert coerced_by_python({}, frozenset()) is False


@pytest.mark.parametrize(
    ("env", "coerced"),
    [
        ({"LC_CTYPE": "C.UTF-8"}, True),
        ({"LC_CTYPE": "C.utf8", "LANG": "POSIX"}, True),
        ({"LC_CTYPE": "UTF-8", "LANG": "C"}, True),
        ({"LC_CTYPE": "C.UTF-8", "LANG": "en_GB.UTF-8"}, False),
        ({"LC_CTYPE": "C.UTF-8", "LC_ALL": "C"}, False),
        ({"LC_CTYPE": "C.UTF-8", "PYTHONCOERCECLOCALE": "0"}, False),
    ],
)
def test_without_proc_the_coercions_own_rule_decides(env: dict[str, str], coerced: bool) -> None:
    assert coerced_by_python(env, None) is coerced


def test_callers_environ_drops_only_the_coerced_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(callerenv, "_exec_names", lambda: frozenset({"LANG", "HOME"}))
    env = {"LANG": "C", "HOME": "/root", "LC_CTYPE": "C.UTF-8"}
    assert callers_environ(env) == {"LANG": "C", "HOME": "/root"}
    assert env["LC_CTYPE"] == "C.UTF-8"  # edgeprof's own environment is left as it is


def test_the_spawned_workload_gets_the_callers_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The backends' spawn passes callers_environ(): a coerced LC_CTYPE is not inherited."""
    monkeypatch.setattr(callerenv, "_exec_names", lambda: frozenset({"LANG", "PATH"}))
    monkeypatch.setenv("LANG", "C")
    monkeypatch.setenv("LC_CTYPE", "C.UTF-8")
    monkeypatch.delenv("LC_ALL", raising=False)
    out = tmp_path / "env"
    spec = RunSpec(command=("sh", "-c", f'echo "[${{LC_CTYPE-unset}}] [$LANG] [$E]" > {out}'),
                   env={"E": "given"})  # fmt: skip
    proc = Process.for_run(spec)
    assert proc.wait(10) == 0
    assert out.read_text() == "[unset] [C] [given]\n"


def test_the_subprocess_python_coerces_and_the_helper_sees_it() -> None:
    """CPython itself: with LANG=C its os.environ has LC_CTYPE; /proc/self/environ has not."""
    code = (
        "import os;"
        "from edgeprof.callerenv import callers_environ;"
        "print(os.environ.get('LC_CTYPE'), callers_environ().get('LC_CTYPE'))"
    )
    env = {"PATH": "/usr/bin:/bin", "LANG": "C", "PYTHONPATH": ":".join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["C.UTF-8", "None"]
