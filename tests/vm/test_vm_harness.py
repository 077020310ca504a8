"""Tests of the VM harness itself: boot one cgroup v2 guest and probe it.

One guest boot serves every test of this module.  When the VM cannot be set up the tests
skip with the reason, except in CI (``CI=true``), where they fail: no tier may skip in CI.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import require

from . import harness

pytestmark = pytest.mark.vm

# Runs in the guest as `sh -c PROBE probe PYTHON TRICKY_ARG`.
PROBE = r"""
set -u
out="$EDGEPROF_VM_OUT"
uname -r > "$out/uname.txt"
cat /proc/self/cgroup > "$out/self_cgroup.txt"
cat /sys/fs/cgroup/cgroup.controllers > "$out/controllers.txt"
mkdir /sys/fs/cgroup/edgeprof-harness-probe
if [ -e /sys/fs/cgroup/edgeprof-harness-probe/cgroup.kill ]; then echo yes; else echo no; fi \
    > "$out/cgroup_kill.txt"
rmdir /sys/fs/cgroup/edgeprof-harness-probe
"$1" -c '
import json, os, sys
json.dump({"value": 6 * 7, "argv": sys.argv[1:], "cwd": os.getcwd(),
           "probe": os.environ.get("EDGEPROF_PROBE"),
           "tier": os.environ.get("EDGEPROF_TEST_TIER"),
           "out": os.environ.get("EDGEPROF_VM_OUT"),
           "home": os.environ.get("HOME"), "path": os.environ.get("PATH")},
          open(os.path.join(os.environ["EDGEPROF_VM_OUT"], "python.json"), "w"))
print("python printed", 6 * 7)
' "$2"
if [ -e /pwned ]; then echo yes; else echo no; fi > "$out/pwned.txt"
echo "marker on stdout"
echo "marker on stderr" >&2
exit 3
"""
# Must reach the guest verbatim: nothing may be expanded or executed.
TRICKY_ARG = 'it\'s "quoted" $HOME `touch /pwned` $(exit 9); exit 9\nsecond line *'
TRICKY_ENV = "$(touch /pwned) 'single' \"double\" \\"


@dataclasses.dataclass(frozen=True)
class Boot:
    """The one guest run shared by the tests, or why there is none."""

    result: harness.GuestResult | None
    assets: harness.VmAssets | None
    unavailable: str | None


@pytest.fixture(scope="module")
def boot() -> Iterator[Boot]:
    """Boot the guest once and run :data:`PROBE` in it."""
    # Collected by a suite already running in the guest: the harness is tested from the
    # host, and a guest inside the guest would take minutes under TCG.
    require(not harness.inside_guest(), "the VM harness is tested from the host only")
    with tempfile.TemporaryDirectory(prefix="edgeprof-vm-test-") as tmp:
        try:
            assets = harness.ensure_assets()
        except harness.VmUnavailable as exc:
            yield Boot(None, None, str(exc))
            return
        result = harness.run_in_guest(
            ["/bin/sh", "-c", PROBE, "probe", str(harness.project_python()), TRICKY_ARG],
            cwd=harness.REPO_ROOT,
            env={"EDGEPROF_PROBE": TRICKY_ENV},
            timeout=600,
            out_dir=Path(tmp),
            assets=assets,
        )
        yield Boot(result, assets, None)


def guest(boot: Boot) -> harness.GuestResult:
    """Return the guest run, or skip (fail in CI) if the VM is unavailable here."""
    require(boot.result is not None, f"VM tier unavailable: {boot.unavailable}")
    assert boot.result is not None
    return boot.result


def read(result: harness.GuestResult, name: str) -> str:
    """Return a file the probe wrote to the out share."""
    path = result.out_dir / name
    assert path.exists(), f"guest did not write {name}; output:\n{result.output}"
    return path.read_text()


def test_kernel_is_cgroup_v2_only(boot: Boot) -> None:
    result = guest(boot)
    assert boot.assets is not None
    assert read(result, "uname.txt").strip() == boot.assets.kernel_release
    assert read(result, "self_cgroup.txt") == "0::/\n"


def test_cgroup2_controllers_available(boot: Boot) -> None:
    controllers = set(read(guest(boot), "controllers.txt").split())
    assert {"cpu", "memory", "io", "pids", "cpuset"} <= controllers


def test_child_group_has_cgroup_kill(boot: Boot) -> None:
    assert read(guest(boot), "cgroup_kill.txt").strip() == "yes"


def test_project_python_runs_with_args_env_and_cwd(boot: Boot) -> None:
    result = guest(boot)
    data = json.loads(read(result, "python.json"))
    assert data["value"] == 42
    assert data["argv"] == [TRICKY_ARG]
    assert data["probe"] == TRICKY_ENV
    assert data["cwd"] == str(harness.REPO_ROOT)
    assert data["tier"] == "vm"
    assert data["out"] == harness.GUEST_OUT_DIR
    assert data["home"] == "/root"
    assert "/usr/bin" in data["path"].split(":")
    assert "python printed 42" in result.output


def test_exit_code_and_output_come_back(boot: Boot) -> None:
    result = guest(boot)
    assert result.exit_code == 3, result.output
    assert "marker on stdout" in result.output
    assert "marker on stderr" in result.output
    assert "edgeprof-vm: command exited with 3" in result.boot_log
    assert read(result, "pwned.txt").strip() == "no"


PANIC_LOG = "[    2.3] traps: double fault\n[    2.3] Kernel panic - not syncing: Fatal exception\n"


@pytest.mark.parametrize(
    ("boot_log", "again"),
    [
        (PANIC_LOG, True),
        ("edgeprof-vm: command started, uptime 3.1\n" + PANIC_LOG, False),  # it ran: a result
        ("[    9.0] Run /init as init process\n", False),  # no panic: a plain failure
    ],
)
def test_a_guest_kernel_that_died_before_the_command_boots_once_more(
    boot_log: str, again: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a guest whose kernel died before the command started is booted again, once:
    nothing ran, so nothing is run twice."""
    from . import launch
    from .guest import GuestResult, VmAssets, VmError

    tries: list[int] = []
    ok = GuestResult(0, "", tmp_path, "", None, 1.0)

    def once(
        argv: object, console: Path, out_dir: Path, timeout: float, cancel: object = None
    ) -> GuestResult:
        tries.append(1)
        if len(tries) == 1:
            raise VmError("the guest reported no exit code (boot failure?)", boot_log)
        return ok

    monkeypatch.setattr(launch, "_launch", once)
    assets = VmAssets(Path("/q"), Path("/k"), Path("/i"), "6.12.0", "6.12", (), ())

    def run() -> GuestResult:
        return launch.run_in_guest(["true"], cwd=Path("/"), out_dir=tmp_path, assets=assets)

    if again:
        assert run() is ok and len(tries) == 2
    else:
        with pytest.raises(VmError):
            run()
        assert len(tries) == 1
