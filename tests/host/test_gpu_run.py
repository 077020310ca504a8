"""A real run on the real kernel with the NVML double standing in for the driver: the GPU
figures are matched to the pids the kernel's group lists, so the run's process counts and
another process on the same GPU (this test's own, outside the run) does not.  The driver's
numbers are the double's; what is real is the run, its group, its pids and the runner's
plumbing from them to ``result.gpu``, ``gpu.csv`` and the report.  The same checks against a
real GPU are the gpu tier's (``tests/gpu``)."""

from __future__ import annotations

import csv
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import edgeprof
from edgeprof.backends import nvml
from edgeprof.errors import ConfigError
from edgeprof.report.results import render_plain
from tests.conftest import HANG_S, require
from tests.nvml_double import FakeGpu, MiB, NvmlDouble

PY = sys.executable
REPO = Path(__file__).resolve().parents[2]

# The workload reports its pid (the double then lists it on the GPU), its view of the GPUs,
# one phase and two iterations; it waits for nothing.
WORKLOAD = """
import os, sys
sys.path.insert(0, {repo!r})
import edgeprof
with open({pidfile!r}, "w") as f:
    f.write(str(os.getpid()))
with open({envfile!r}, "w") as f:
    f.write(os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>"))
with edgeprof.phase("infer"):
    for _ in range(2):
        with edgeprof.iteration(items=4):
            sum(range(200_000))
"""


def _double(pidfile: Path) -> NvmlDouble:
    other = os.getpid()  # another job on the same GPU: this test process, not in the run

    def processes() -> dict[int, int | None]:
        procs: dict[int, int | None] = {other: 4096 * MiB}
        if pidfile.exists() and pidfile.read_text():
            procs[int(pidfile.read_text())] = 256 * MiB
        return procs

    lib = NvmlDouble([FakeGpu("GPU-0000", processes=processes), FakeGpu("GPU-1111", minor=1)])

    def tick(g: FakeGpu) -> None:  # the counter moves at every read, as a busy GPU's does
        g.energy_mj += 250

    lib.on_read = tick
    return lib


# A stand-in for PyTorch's CUDA module, enough for the workload client's cap: CUDA in use,
# one 80 GiB GPU, and the fractions it is asked to cap each GPU at written to a file.
FAKE_TORCH = """
import os
import stat
class _Props:
    total_memory = 80 * 1024 ** 3
class cuda:
    @staticmethod
    def is_initialized(): return True
    @staticmethod
    def is_available(): return True
    @staticmethod
    def device_count(): return 1
    @staticmethod
    def get_device_properties(i): return _Props()
    @staticmethod
    def set_per_process_memory_fraction(f, i):
        with open(os.environ["FRACTIONS"], "a") as out:
            out.write(f"{i} {f!r}\\n")
"""


def _run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpus: str | None, **kw: object
) -> edgeprof.RunResult:
    pidfile, envfile = tmp_path / "pid", tmp_path / "env"
    script = tmp_path / "work.py"
    (tmp_path / "torch.py").write_text(FAKE_TORCH)
    code = WORKLOAD.format(repo=str(REPO), pidfile=str(pidfile), envfile=str(envfile))
    script.write_text("import torch\n" + code)  # torch: the stand-in beside the script
    lib = _double(pidfile)
    monkeypatch.setattr(nvml, "load", lambda *a, **k: lib)
    result = edgeprof.profile([PY, str(script)], gpus=gpus, out_dir=tmp_path / "out",
                              interval=0.02, env={"FRACTIONS": str(tmp_path / "fractions")},
                              **kw)  # type: ignore[arg-type]  # fmt: skip
    assert lib.initialised == 0, "the NVML session was not closed"
    return result


def test_a_run_counts_its_own_gpu_memory_not_another_processs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = _run(tmp_path, monkeypatch, gpus=None)
    assert r.exit_code == 0, r.warnings
    g = r.gpu
    assert g is not None and [d.uuid for d in g.devices] == ["GPU-0000", "GPU-1111"]
    first, second = g.devices
    assert first.memory_source == "processes" and first.processes == 1
    assert first.memory_peak_bytes == 256 * MiB  # the 4 GiB of the other process not counted
    assert second.memory_peak_bytes == 0 and second.processes == 0
    assert g.memory_peak_bytes == 256 * MiB
    # Energy: every read moved each counter 0.25 J; the run's is the end less the start.
    assert g.energy_j is not None and g.energy_j > 0
    assert first.energy_j == pytest.approx(0.25 * (g.samples - 1))
    assert g.energy_j == pytest.approx(2 * 0.25 * (g.samples - 1))
    assert g.energy_per_iteration_j is not None and 0 < g.energy_per_iteration_j * 2 <= g.energy_j
    assert g.energy_per_item_j == pytest.approx(g.energy_per_iteration_j / 4)
    assert [p.name for p in g.phases] == ["infer"]
    assert (tmp_path / "env").read_text() == "<unset>"  # not asked: the environment as it was
    # The files: result.json carries the block, gpu.csv a row per GPU per sample.
    saved = json.loads((tmp_path / "out" / "result.json").read_text())
    assert saved["gpu"]["memory_peak_bytes"] == 256 * MiB
    rows = list(csv.DictReader((tmp_path / "out" / "gpu.csv").open()))
    assert len(rows) == 2 * g.samples
    assert max(int(x["memory_bytes"]) for x in rows if x["gpu"] == "0") == 256 * MiB
    # samples.csv: each row carries the GPUs' last reading at or before it.
    samples = list(csv.DictReader((tmp_path / "out" / "samples.csv").open()))
    assert list(samples[0])[-4:] == ["gpu_memory_bytes", "gpu_util_pct", "gpu_power_w",
                                     "gpu_energy_j"]  # fmt: skip
    # Which GPU reading a row falls after is the scheduler's (the GPUs' last reading, the
    # one with the run's 256 MiB, may come after the sampler's last row), so the rows hold
    # some of the readings (at least one: the GPUs were read before the wait), and nothing
    # but what the GPUs were read at.
    held = [int(x["gpu_memory_bytes"]) for x in samples if x["gpu_memory_bytes"]]
    assert held and set(held) <= {0, 256 * MiB}, held
    assert all(float(x["gpu_power_w"]) == 140.0 for x in samples if x["gpu_power_w"])
    text = render_plain([r])
    assert "GPU" in text and "256.0MiB" in text and "0: NVIDIA H100 80GB HBM3" in text


def test_gpus_shows_the_workload_only_the_chosen_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = _run(tmp_path, monkeypatch, gpus="1")
    assert (tmp_path / "env").read_text() == "GPU-0000"  # "1": a count, the first one
    assert r.gpu is not None and [d.uuid for d in r.gpu.devices] == ["GPU-0000"]
    assert r.gpu.selection == "1"


def test_gpus_none_hides_them_and_measures_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = _run(tmp_path, monkeypatch, gpus="none")
    assert (tmp_path / "env").read_text() == ""
    assert r.gpu is None


def test_a_gpu_this_host_lacks_is_refused_before_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError, match="no GPU '5'"):
        _run(tmp_path, monkeypatch, gpus="0,5")
    assert not (tmp_path / "out").exists() and not (tmp_path / "pid").exists()


def test_a_container_like_pid_namespace_is_seen_though_its_nspid_has_one_number() -> None:
    """``unshare --pid --mount-proc``, as a container runtime sets one up: the driver's pids
    are the host's there, so GPU memory must fall back to the device's figure."""
    code = (
        f"import sys; sys.path.insert(0, {str(REPO)!r}); "
        "from edgeprof.measure.gpu import nested_pid_namespace; "
        "print(nested_pid_namespace(), open('/proc/self/status').read().count('NSpid:\\t1\\n'))"
    )
    out = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", PY, "-c", code],
        capture_output=True, text=True, check=True, timeout=HANG_S,
    ).stdout.split()  # fmt: skip
    assert out == ["True", "1"]


def test_gpu_memory_is_enforced_in_process_and_held_to_the_peak(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = _run(tmp_path, monkeypatch, gpus=None, gpu_memory="1g")
    g = r.gpu
    assert g is not None and g.memory_limit_bytes == 1024 * MiB
    # The workload's PyTorch was asked to cap GPU 0 at 1 GiB of its 80, once, and said so.
    assert (tmp_path / "fractions").read_text().split() == ["0", repr(1 / 80)]
    assert g.memory_limit_enforced and not g.unified_memory
    assert [m.name for m in r.marks] == []  # the client's mark is the runner's, not the user's
    text = render_plain([r])
    assert "GPU memory 1.0GiB: fits, peak 256.0MiB, 768.0MiB to spare (enforced in-process" in text


def test_gpu_memory_over_the_limit_does_not_fit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = _run(tmp_path, monkeypatch, gpus=None, gpu_memory="128m")
    assert "GPU memory 128.0MiB: does not fit: peak 256.0MiB, 128.0MiB over" in render_plain([r])


def test_unified_memory_holds_host_and_gpu_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A device whose CPU and GPU share 200 MiB: the host side alone fits well under it, the
    GPU's 256 MiB with it does not; nothing is capped in-process (one memory cannot be split
    per process)."""
    r = _run(tmp_path, monkeypatch, gpus=None, unified_memory=True,
             limits=edgeprof.Limits(memory="200m"))  # fmt: skip
    assert r.exit_code == 0 and r.memory.peak_bytes is not None
    assert r.memory.peak_bytes < 100 * MiB
    g = r.gpu
    assert g is not None and g.unified_memory and g.memory_limit_bytes == 200 * MiB
    assert not g.memory_limit_enforced and not (tmp_path / "fractions").exists()
    text = render_plain([r])
    assert "memory 200.0MiB shared by CPU and GPU: does not fit: host " in text
    assert "+ GPU 256.0MiB = " in text


OPENER = """
import errno, os, sys
out = []
for path in sys.argv[2:]:
    try:
        os.close(os.open(path, os.O_RDWR))
        out.append("opened")
    except OSError as exc:
        out.append(errno.errorcode[exc.errno])
open(sys.argv[1], "w").write(" ".join(out))
"""


def _device_nodes(tmp_path: Path) -> list[str]:
    """Device nodes as the NVIDIA driver makes them: character major 195, minors 0 and 1."""
    nodes = []
    for minor in (0, 1):
        node = tmp_path / f"nvidia{minor}"
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(195, minor))
        nodes.append(str(node))
    return nodes


def _opened_outside_any_run(nodes: list[str], seen: Path) -> list[str]:
    """What opening each node does with no device rule: ``ENXIO`` where no driver is behind
    the major, ``opened`` on a GPU host for a GPU that is there (an H200 host: minor 0)."""
    subprocess.run([PY, "-c", OPENER, str(seen), *nodes], check=True, timeout=HANG_S)
    outside = seen.read_text().split()
    assert "EPERM" not in outside, outside  # a denial below is the rule's, not this host's
    return outside


def test_a_gpu_not_chosen_cannot_be_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two GPUs, ``--gpus device=0``: the workload opens GPU 0's device file as it would
    outside the run (ENXIO with no driver behind it; opened on a GPU host) and is denied GPU
    1's (EPERM): cgroup v1's devices controller, or on cgroup v2 the BPF device filter
    attached to the run's group."""
    nodes = _device_nodes(tmp_path)
    lib = NvmlDouble([FakeGpu("GPU-0000", minor=0), FakeGpu("GPU-1111", minor=1)])
    monkeypatch.setattr(nvml, "load", lambda *a, **k: lib)
    seen = tmp_path / "seen"
    outside = _opened_outside_any_run(nodes, seen)
    r = edgeprof.profile([PY, "-c", OPENER, str(seen), *nodes], gpus="device=0")
    assert r.exit_code == 0, r.warnings
    assert seen.read_text().split() == [outside[0], "EPERM"], r.warnings
    assert not [w for w in r.warnings if "device files" in w]
    # --gpus none: every NVIDIA device denied, so CUDA could not start at all.
    r = edgeprof.profile([PY, "-c", OPENER, str(seen), *nodes], gpus="none")
    assert seen.read_text().split() == ["EPERM", "EPERM"]


def test_the_bpf_device_filter_on_this_kernels_cgroup_v2_hierarchy(tmp_path: Path) -> None:
    """The cgroup v2 filter by itself, on this host's v2 hierarchy (the unified one beside
    v1's on a hybrid host): a process that joined the group is denied what the rule names."""
    from edgeprof.backends._device_filter import deny_devices

    mounts = [
        line.split(" - ")[0].split()[4]
        for line in Path("/proc/self/mountinfo").read_text().splitlines()
        if " - cgroup2 " in line
    ]
    require(bool(mounts), "no cgroup v2 hierarchy is mounted here")
    own = Path("/proc/self/cgroup").read_text().split("0::", 1)[1].splitlines()[0]
    group = Path(mounts[0] + own.rstrip("/")) / f"edgeprof-test-bpf-{os.getpid()}"
    group.mkdir()
    try:
        deny_devices(group, ["c 195:1"])
        nodes = _device_nodes(tmp_path)
        seen = tmp_path / "seen"
        outside = _opened_outside_any_run(nodes, seen)
        # The child joins the v2 group itself (only that hierarchy: its memory group stays).
        join = f"open({str(group / 'cgroup.procs')!r}, 'w').write(str(__import__('os').getpid()))"
        subprocess.run([PY, "-c", join + "\n" + OPENER, str(seen), *nodes], check=True,
                       timeout=HANG_S)  # fmt: skip
        assert seen.read_text().split() == [outside[0], "EPERM"]
    finally:
        group.rmdir()
