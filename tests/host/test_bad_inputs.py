"""The bad-input catalogue: every case is exit 2, one line on stderr, nothing run, nothing left.

Runs the real CLI in-process against this host's real cgroup backend (v1 here, v2 in the VM
tier), so "nothing run" is checked where it matters.  Each case's command would create
``ran`` and each injection payload would create ``pwned``; after the call neither exists,
the directory holds only what the case prepared, and (autouse fixture in conftest.py) no run
group is left in any hierarchy.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from edgeprof.cli import main

# Orchestration, not cgroup mechanics: the v2 guest leaves it out (see pyproject's markers).
pytestmark = pytest.mark.not_in_vm

Case = Callable[[Path], list[str]]

# Derived from this machine, never assumed to have 2 cores: one CPU past the highest we may
# use (absent or not ours) and one more CPU than we have.
ALLOWED_CPUS = sorted(os.sched_getaffinity(0))
ABSENT_CPU = str(ALLOWED_CPUS[-1] + 1)
TOO_MANY_CPUS = str(len(ALLOWED_CPUS) + 1)


def touch(t: Path) -> list[str]:
    return ["--", "touch", str(t / "ran")]


def model_cmd(t: Path) -> list[str]:
    """A workload that records each model argument it gets (and so proves it ran)."""
    return ["--", "sh", "-c", f'touch {t / "ran"}; printf "%s\\n" "$1" >> {t / "ran"}', "sh"]


def devices(t: Path) -> str:
    """A catalog with a board of more cores than this host has."""
    path = t / "devices.yml"
    path.write_text(f"devices:\n  big:\n    cores: {TOO_MANY_CPUS}\n    memory: 1g\n    speed: 1\n")
    return str(path)


def bad_devices(t: Path) -> str:
    path = t / "bad-devices.yml"
    path.write_text("devices:\n  bad:\n    cores: 1\n    memory: lots\n")
    return str(path)


def pwned(t: Path) -> str:
    return str(t / "pwned")


def model_file(content: bytes) -> Case:
    def case(t: Path) -> list[str]:
        (t / "models.txt").write_bytes(content)
        return ["-f", str(t / "models.txt"), *model_cmd(t)]

    return case


def prepared(t: Path) -> set[str]:
    return {
        *("models.txt", "notexec.sh", "ro", "env.template", "app"),
        *("devices.yml", "bad-devices.yml"),
    }


GOOD_TEMPLATE = {
    "IMAGEREPO": "python:3.11-slim",
    "DIR": "{t}/app",
    "SCRIPT": "main.sh",
    "COMMAND": "sh",
    "SAMPLETIME": "0.05",
    "OUTPUTFILE": "out.txt",
    "DOCFILE": "Dockerfile",
}


def template(raw: bytes | None = None, **changes: str) -> Case:
    """An env.template run on the cgroup backend; its script would create ``ran``."""

    def case(t: Path) -> list[str]:
        (t / "app").mkdir(exist_ok=True)
        (t / "app" / "main.sh").write_text(f"touch {t / 'ran'}\n")
        values = {k: v.replace("{t}", str(t)) for k, v in {**GOOD_TEMPLATE, **changes}.items()}
        text = raw or "".join(f"{k}={v}\n" for k, v in values.items()).encode()
        (t / "env.template").write_bytes(text)
        return ["--backend", "cgroup", "-e", str(t / "env.template")]

    return case


CASES: dict[str, Case] = {
    # limits
    "cpus-word": lambda t: ["--cpus", "abc", *touch(t)],
    "cpus-negative": lambda t: ["--cpus", "-1", *touch(t)],
    "cpus-too-many": lambda t: ["--cpus", TOO_MANY_CPUS, *touch(t)],
    "device-too-many-cores": lambda t: ["--device", "big", "--devices", devices(t), *touch(t)],
    "device-unknown": lambda t: ["--device", "nope", "--devices", devices(t), *touch(t)],
    "device-bad-catalog": lambda t: ["--device", "bad", "--devices", bad_devices(t), *touch(t)],
    "cpus-nan": lambda t: ["--cpus", "nan", *touch(t)],
    "cpus-inf": lambda t: ["--cpus", "inf", *touch(t)],
    "memory-unit": lambda t: ["--memory", "12x", *touch(t)],
    "memory-tiny": lambda t: ["--memory", "1k", *touch(t)],
    "memory-empty": lambda t: ["--memory", "", *touch(t)],
    "cpuset-absent-cpu": lambda t: ["--cpuset", ABSENT_CPU, *touch(t)],
    "cpuset-reversed": lambda t: ["--cpuset", "1-0", *touch(t)],
    "pids-zero": lambda t: ["--pids", "0", *touch(t)],
    "pids-fraction": lambda t: ["--pids", "1.5", *touch(t)],
    "pids-injection": lambda t: ["--pids", f"64; touch {pwned(t)}", *touch(t)],
    "interval-too-fine": lambda t: ["--interval", "0.0001", *touch(t)],
    "interval-word": lambda t: ["--interval", "fast", *touch(t)],
    "timeout-negative": lambda t: ["--timeout", "-5", *touch(t)],
    "timeout-substitution": lambda t: ["--timeout", f"$(touch {pwned(t)})", *touch(t)],
    # environment, directories, outputs
    "env-no-equals": lambda t: ["--env", "NOEQUALS", *touch(t)],
    "env-empty-key": lambda t: ["--env", "=value", *touch(t)],
    "env-key-injection": lambda t: ["--env", f"A;touch {pwned(t)}=1", *touch(t)],
    "env-key-newline": lambda t: ["--env", "A\nB=1", *touch(t)],
    "cwd-missing": lambda t: ["--cwd", str(t / "nowhere"), *touch(t)],
    "out-unwritable": lambda t: ["--out", "/proc/edgeprof-out", *touch(t)],
    "out-read-only": lambda t: ["--out", str(t / "ro" / "out"), *touch(t)],
    "markdown-no-dir": lambda t: ["--markdown", str(t / "no" / "x.md"), *touch(t)],
    "markdown-is-dir": lambda t: ["--markdown", str(t), *touch(t)],
    # backends
    "backend-unknown": lambda t: ["--backend", "nosuch", *touch(t)],
    "image-without-docker": lambda t: ["--image", "busybox", *touch(t)],
    "docker-args-injection": lambda t: [
        "--backend",
        "docker",
        "--docker-args",
        f"--rm; touch {pwned(t)}",
        *touch(t),
    ],
    "cgroup-parent-escape": lambda t: ["--cgroup-parent", "../../escape", *touch(t)],
    "cgroup-parent-newline": lambda t: ["--cgroup-parent", "/a\nb", *touch(t)],
    # the command
    "command-missing": lambda t: ["--", "no-such-command-edgeprof"],
    "command-not-executable": lambda t: ["--", str(t / "notexec.sh")],
    "command-empty": lambda t: ["--", ""],
    "option-unknown": lambda t: ["--bogus", *touch(t)],
    "repeat-zero": lambda t: ["--repeat", "0", *touch(t)],
    # model lists (-m) and model files (-f): injection attempts
    "models-empty-entry": lambda t: ["-m", "a,,b", *model_cmd(t)],
    "models-and-file": lambda t: ["-m", "a", "-f", str(t / "models.txt"), *model_cmd(t)],
    "model-file-missing": lambda t: ["-f", str(t / "nowhere.txt"), *model_cmd(t)],
    "model-semicolon": lambda t: ["-m", f"a; touch {pwned(t)}", *model_cmd(t)],
    "model-rm-rf": lambda t: ["-m", "x; rm -rf /", *model_cmd(t)],
    "model-substitution": lambda t: ["-m", f"$(touch {pwned(t)})", *model_cmd(t)],
    "model-backticks": lambda t: ["-m", f"`touch {pwned(t)}`", *model_cmd(t)],
    "model-newline": lambda t: ["-m", "a\nb", *model_cmd(t)],
    "model-dotdot": lambda t: ["-m", "../../etc/passwd", *model_cmd(t)],
    "model-very-long": lambda t: ["-m", "m" * 300, *model_cmd(t)],
    "model-non-utf8": lambda t: ["-m", os.fsdecode(b"model-\xff\xfe"), *model_cmd(t)],
    "model-option-like": lambda t: ["-m", "--help", *model_cmd(t)],
    "model-pipe": lambda t: ["-m", f"a | tee {pwned(t)}", *model_cmd(t)],
    "model-file-empty": model_file(b"# nothing here\n\n"),
    "model-file-non-utf8": model_file(b"good\nbad-\xff\n"),
    "model-file-injection": lambda t: model_file(f"ok\n$(touch {pwned(t)})\n".encode())(t),
    "model-file-dotdot": model_file(b"ok\n../../../root/.ssh/id_rsa\n"),
    "model-file-nul": model_file(b"ok\nbad\x00name\n"),
    # env.template (Auptimizer format): read as data, never sourced by a shell
    "template-dir-semicolon": template(DIR="{t}/app; touch {t}/pwned"),
    "template-command-substitution": template(COMMAND="$(touch {t}/pwned)"),
    "template-command-backticks": template(COMMAND="`touch {t}/pwned`"),
    "template-script-dotdot": template(SCRIPT="../../../etc/passwd"),
    "template-script-absolute": template(SCRIPT="/bin/sh"),
    # Measured before: an absolute OUTPUTFILE had a summary appended to an existing 0600
    # file, a ../ one written outside, and one with an escape made `o\x1b[31m.txt`.
    "template-outputfile-absolute": template(OUTPUTFILE="{t}/pwned"),
    "template-outputfile-dotdot": template(OUTPUTFILE="../pwned"),
    "template-outputfile-control": template(OUTPUTFILE="o\x1b[31m.txt"),
    "template-cpus-word": template(DOCKCPUS="lots"),
    "template-memory-unit": template(DOCKMEMORY="12x"),
    "template-missing-key": template(raw=b"DIR=app\nSCRIPT=main.sh\n"),
    "template-non-utf8": template(raw=b"IMAGEREPO=\xff\xfe\nDIR=app\n"),
    "template-very-long-key": template(raw=b"A" * 5000 + b"=1\n"),
    "template-and-command": lambda t: [*template()(t), *touch(t)],
    "name-newline": lambda t: ["--name", "label\nFAKE ROW", *touch(t)],
    "name-dotdot": lambda t: ["--name", "../../x", "--out", str(t / "out"), *touch(t)],
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_bad_input_is_one_line_exit_2_and_nothing_runs(
    mechanism: str, case: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notexec.sh").write_text("#!/bin/sh\ntouch ran\n")
    (tmp_path / "ro").mkdir(mode=0o555)
    argv = CASES[case](tmp_path)
    if case == "out-read-only":  # root may write anywhere: a read-only mount stops it
        _read_only_mount(tmp_path / "ro")
    try:
        code = main(["run", *argv])
    finally:
        if case == "out-read-only":
            subprocess.run(["umount", str(tmp_path / "ro")], check=True)
    out, err = capfd.readouterr()
    assert code == 2, (case, err)
    assert err.startswith("edgeprof: error: "), err
    assert err.count("\n") == 1, err
    assert out == ""
    assert not (tmp_path / "ran").exists(), "the workload ran"
    assert not (tmp_path / "pwned").exists(), "an injected command ran"
    assert {p.name for p in tmp_path.iterdir()} <= prepared(tmp_path)
    assert list((tmp_path / "ro").iterdir()) == []


def _read_only_mount(path: Path) -> None:
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(path)], check=True)


def test_the_catalogue_is_large_enough() -> None:
    injections = [c for c in CASES if any(k in c for k in ("injection", "substitution", "semi"))]
    assert len(CASES) >= 30 and len(injections) >= 5
