"""The Ray executor: each round of a sweep is a Ray task on a measuring node.

``edgeprof run --executor ray[=ADDRESS] …`` splits the sweep by rounds, as ``--shard`` does
(:mod:`edgeprof.sweeps.merge`: every part measures every model, so each node is a block of
the design), and submits part *I* of *N* (``N`` = the rounds) as a task that runs
``edgeprof run --shard I/N`` on its node, with the cgroup backend of that node, in a
fresh process.  The driver writes each part's files back under ``OUT/parts/`` and merges
them: the output is the unsplit sweep's.

- **A measuring slot per task.**  A task asks for one unit of the custom resource
  :data:`SLOT` and for the CPUs and memory of the sweep's largest setting.  A node offers
  as many slots as runs it can measure at once (``ray start --resources
  '{"edgeprof_slot": 1}'``); the head, or any node without the resource, runs none.  On
  the node, the part's pinned runs still lease their cores (:mod:`edgeprof.measure.leases`).
  A part no measuring node can take is refused before any is submitted (:func:`check_fits`):
  Ray would queue it until such a node joins.
- **Progress streams back** through a queue the driver reads while it waits: each line the
  part prints on stderr, tagged with its part and node.  The queue's actor lives on the
  driver's node, which the sweep cannot outlive anyway: on a measuring node, losing that
  node ended the whole sweep (measured: ``ActorDiedError`` from the driver's read, in the
  ray tier's lost-node test).  Should it die all the same, the lines are lost, said once,
  and the parts go on.
- **A node lost mid-part** (its raylet or worker died: Ray's system errors) runs the part
  again on another node, up to :data:`ATTEMPTS` times, and says so.  Ray's own task retries
  are off, so that every retry is said.  A workload's failure is not a loss: the part ends,
  its results say how the run failed, and the merge reports it.  A part that ends without
  results (edgeprof refused its input, or its node cannot run it) is an error naming the
  node and the part's last line.
- The part's process gets SIGTERM when its worker dies (``PR_SET_PDEATHSIG``) or its
  node's raylet does, which ends its run as interrupted and removes its groups, so a lost
  node leaves no run behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..callerenv import callers_environ
from ..errors import ConfigError, EdgeprofError

SLOT = "edgeprof_slot"
"""The custom resource a measuring node offers, one unit per run it measures at once."""

PLACEMENT = "placement.json"
"""In the parts' directory: where each part ran, and in how many tries."""

ATTEMPTS = 3
"""Tries per part when nodes are lost under it."""

FORWARDED_ENV = ("EDGEPROF_LEASE_DIR",)
"""The driver's settings a part's edgeprof also gets (a shared lease directory)."""

PROBE_TIMEOUT_S = 5.0
"""How long the cluster's address may take to accept a connection."""

NODE_CHECK_S = 0.2
"""How often a part checks that its node's raylet is alive."""

_PR_SET_PDEATHSIG = 1


class RayUnavailable(EdgeprofError):
    """No Ray here, or no cluster to run on."""


@dataclass(frozen=True)
class PartResult:
    """What a task brings back: the part's files, and where and how it ran."""

    index: int
    node_id: str
    hostname: str
    exit_code: int
    files: dict[str, bytes]
    """The part's output directory: relative path → content."""
    last_line: str
    lost: bool = False
    """The node's raylet went away under the part: its results are not the part's."""
    tries: int = 1
    """Set by the driver: 1, or more when nodes were lost under the part."""


def _die_with_parent() -> None:
    """In the part's process before exec: SIGTERM when the Ray worker that started it dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def _end_with_node(proc: subprocess.Popen[str], lost: threading.Event) -> None:
    """SIGTERM the part when this worker's raylet (its parent) is gone: the node is lost,
    and a worker blocked in the task outlives its raylet (measured: a run held 60 s on a
    node removed from a ``Cluster``)."""
    raylet = os.getppid()
    while proc.poll() is None:
        if os.getppid() != raylet:
            lost.set()
            proc.terminate()
            return
        time.sleep(NODE_CHECK_S)


def _put(queue: Any, item: tuple[int, str, str]) -> Any:
    """``queue`` after putting ``item`` on it, or ``None`` once the queue's actor is gone:
    the progress lines are lost, the part is not (its stderr is still read to the end)."""
    import ray

    if queue is None:
        return None
    try:
        queue.put(item)
    except ray.exceptions.RayActorError:
        return None
    return queue


PART_DIR = "\x00part\x00"
"""A part's progress line names its directory by this mark, which the driver replaces with
the part's own (``OUT/parts/part-I``): the node's scratch directory, removed once its files
are sent back, had been the one path progress named (``wrote /tmp/edgeprof-part-1-…/part/``)."""


def run_part(
    index: int,
    count: int,
    words: Sequence[str],
    cwd: str,
    env: Mapping[str, str],
    queue: Any,
) -> PartResult:
    """The task: ``edgeprof run --shard index/count WORDS`` on this node, its stderr lines
    put on ``queue`` as they come; its output directory read back and removed."""
    import ray

    node_id = ray.get_runtime_context().get_node_id()
    host = socket.gethostname()
    if not Path(cwd).is_dir():
        return PartResult(index, node_id, host, 2, {}, f"{cwd}: no such directory on {host}")
    scratch = Path(tempfile.mkdtemp(prefix=f"edgeprof-part-{index}-"))
    out = scratch / "part"
    argv = [sys.executable, "-m", "edgeprof", "run", "--shard", f"{index}/{count}",
            "--out", str(out), *words]  # fmt: skip
    last = ""
    try:
        with subprocess.Popen(
            argv,
            cwd=cwd,
            env={**callers_environ(), **env},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,  # the tables: the driver prints the merged sweep's
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=_die_with_parent,
        ) as proc:
            assert proc.stderr is not None
            lost = threading.Event()
            threading.Thread(target=_end_with_node, args=(proc, lost), daemon=True).start()
            for line in proc.stderr:
                last = line.rstrip("\n") or last
                queue = _put(queue, (index, host, line.rstrip("\n").replace(str(out), PART_DIR)))
            code = proc.wait()
        files = {
            str(p.relative_to(out)): p.read_bytes()
            for p in sorted(out.rglob("*"))
            if p.is_file() and not p.is_symlink()
        }
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return PartResult(index, node_id, host, code, files, last, lost=lost.is_set())


@dataclass(frozen=True)
class RayTarget:
    """What each part asks for."""

    cpus: float
    memory: int | None
    gpus: int = 0
    """``--gpus N``: Ray gives each part N GPUs of its node (``CUDA_VISIBLE_DEVICES``)."""


@contextlib.contextmanager
def connected(address: str | None) -> Iterator[Any]:
    """``ray`` connected to the cluster at ``address`` (``None``: ``$RAY_ADDRESS``, else a
    cluster started on this machine with ``ray start``), never a new local one.  The one
    owner of the connection: it is shut down once, at the block's end on every path (its
    closers had been four, and an error between them, after the output directory and before
    the parts, had left it open until the interpreter's exit)."""
    try:
        import ray
    except ImportError:
        raise RayUnavailable("--executor ray needs Ray: pip install 'edgeprof[ray]'") from None
    target = address or os.environ.get("RAY_ADDRESS") or "auto"
    _probe(target)
    try:
        ray.init(address=target, log_to_driver=False, logging_level=logging.ERROR,
                 configure_logging=True)  # fmt: skip
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise RayUnavailable(_not_joined(target, exc)) from None
    try:
        slots = ray.cluster_resources().get(SLOT, 0)  # type: ignore[no-untyped-call]
        if slots < 1:
            raise RayUnavailable(
                f"the Ray cluster at {target} has no measuring node: start them with "
                f"ray start --address=… --resources='{{\"{SLOT}\": 1}}'"
            )
        yield ray
    finally:
        ray.shutdown()


NO_CLUSTER_HINT = "start one (ray start --head) or give --executor ray=ADDRESS"


def _not_joined(target: str, exc: Exception) -> str:
    """Why ``ray.init`` joined no cluster, in edgeprof's words.  Ray's own text names options
    of Ray's command line that edgeprof does not have ("setting `--address` flag or
    `RAY_ADDRESS`"), and quoted, it left a stray ".;" in the line.  It raises
    ``ConnectionError`` where it finds no cluster, or several on this machine; anything else
    (a cluster of another Ray version) is the cluster's refusal, whose reason only Ray has:
    that reason is kept, its full stop dropped."""
    if isinstance(exc, ConnectionError):
        if target == "auto" and "multiple" in str(exc).lower():
            return "several Ray clusters run on this machine: pick one with --executor ray=ADDRESS"
        where = (
            "on this machine (none started here with ray start, and RAY_ADDRESS is not set)"
            if target == "auto"
            else f"at {target}"
        )
        return f"no Ray cluster {where}: {NO_CLUSTER_HINT}"
    first = str(exc).strip().splitlines()[0].rstrip(".") if str(exc).strip() else type(exc).__name__
    return f"the Ray cluster at {target} could not be joined: {first}"


def check_fits(ray: Any, target: RayTarget) -> None:
    """Refuse, before any part is submitted, a sweep whose part no measuring node can take:
    Ray queues a task no node can hold and waits for a node that never comes (a ``--cpus 2``
    part on a cluster of 1-CPU nodes had waited without a word)."""
    why = no_node_fits(target, ray.nodes())
    if why is not None:
        raise ConfigError(why)


def no_node_fits(target: RayTarget, nodes: Sequence[Mapping[str, Any]]) -> str | None:
    """Why no alive measuring node in ``nodes`` (``ray.nodes()``: ``Alive``, ``Resources``
    as totals, memory in bytes) has what one part asks for, in one line; ``None`` when one
    has."""
    from ..units import format_binary

    asked = {"CPU": target.cpus, "memory": target.memory or 0, "GPU": target.gpus}
    offers = []
    for node in nodes:
        have = node.get("Resources") or {}
        if not node.get("Alive") or have.get(SLOT, 0) < 1:
            continue
        if all(have.get(k, 0) >= v for k, v in asked.items()):
            return None
        gpus = f", {have.get('GPU', 0):g} GPU" if target.gpus else ""
        offers.append(
            f"{node.get('NodeManagerHostname', '?')}: {have.get('CPU', 0):g} CPU, "
            f"{format_binary(have.get('memory', 0))}{gpus}"
        )
    need = [f"{target.cpus:g} CPU"]
    need += [] if target.memory is None else [format_binary(target.memory)]
    need += [f"{target.gpus} GPU"] if target.gpus else []
    return (
        f"no measuring node can take a part: each asks for {', '.join(need)} and a slot; the "
        f"measuring nodes offer {'; '.join(offers) or 'nothing'} (start larger nodes, or "
        "lower --cpus, --memory or --gpus)"
    )


def _probe(target: str) -> None:
    """A ``HOST:PORT`` (or ``ray://HOST:PORT``) nobody listens on is said now: ``ray.init``
    retries it for minutes (measured: still retrying after 2 min)."""
    hostport = target.removeprefix("ray://")
    host, colon, port = hostport.rpartition(":")
    if target == "auto" or not colon or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_TIMEOUT_S).close()
    except OSError as exc:
        raise RayUnavailable(
            f"no Ray cluster at {target}: {exc.strerror or exc}; {NO_CLUSTER_HINT}"
        ) from None


def run_parts(
    ray: Any,
    target: RayTarget,
    count: int,
    words: Sequence[str],
    stage: Path,
    progress: Callable[[str], None],
) -> list[PartResult]:
    """Run parts 1 … ``count`` on the cluster ``ray`` is connected to (:func:`connected`,
    which closes it); each part's files written under ``stage/part-I``.  The parts'
    results, in order."""
    from ray.util.queue import Empty, Queue

    pending: dict[Any, tuple[int, int]] = {}
    try:
        queue: Any = Queue(actor_options=_beside_the_driver(ray))
        task = ray.remote(run_part).options(
            num_cpus=target.cpus,
            num_gpus=target.gpus,
            resources={SLOT: 1},
            max_retries=0,  # every retry is ours, and said
            **({} if target.memory is None else {"memory": target.memory}),
        )
        env = {k: os.environ[k] for k in FORWARDED_ENV if k in os.environ}
        cwd = os.getcwd()

        def submit(i: int, attempt: int) -> None:
            pending[task.remote(i, count, list(words), cwd, env, queue)] = (i, attempt)

        for i in range(1, count + 1):
            submit(i, 1)
        done: dict[int, PartResult] = {}
        slots = int(ray.cluster_resources()[SLOT])
        progress(f"{count} parts on {slots} measuring slot{'' if slots == 1 else 's'}")
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=0.2)
            queue = _drain(queue, Empty, progress, stage)
            for ref in ready:
                i, attempt = pending.pop(ref)
                try:
                    result: PartResult | None = ray.get(ref)
                    lost = None if result is None or not result.lost else "its raylet ended"
                except ray.exceptions.RayTaskError as exc:  # our own code failed there
                    raise EdgeprofError(f"part {i}/{count} failed on its node: {exc}") from exc
                except ray.exceptions.RayError as exc:  # the node, its worker or its store
                    result, lost = None, type(exc).__name__
                if lost is not None or result is None:
                    if attempt >= ATTEMPTS:
                        raise EdgeprofError(
                            f"part {i}/{count} was lost {attempt} times with its node "
                            f"({lost}): giving up"
                        )
                    progress(
                        f"part {i}/{count} was lost with its node ({lost}): "
                        f"running it again (try {attempt + 1} of {ATTEMPTS})"
                    )
                    submit(i, attempt + 1)
                    continue
                if not result.files:
                    raise ConfigError(
                        f"part {i}/{count} on {result.hostname} wrote no results "
                        f"(exit {result.exit_code}): {result.last_line}"
                    )
                _write(stage / f"part-{i}", result.files)
                done[i] = dataclasses.replace(result, files={}, tries=attempt)
                progress(f"part {i}/{count} done on {result.hostname} (node {result.node_id[:8]})")
        _drain(queue, Empty, progress, stage)
        parts = [done[i] for i in sorted(done)]
        placement = [
            {"part": r.index, "node_id": r.node_id, "hostname": r.hostname, "tries": r.tries,
             "exit_code": r.exit_code}
            for r in parts
        ]  # fmt: skip
        from ..storage import write_json_atomic

        write_json_atomic(stage / PLACEMENT, placement)
        return parts
    except BaseException:
        for ref in pending:  # an error or Ctrl-C: no part goes on measuring
            ray.cancel(ref, force=True)  # its worker dies: the part's edgeprof gets SIGTERM
        raise


def _beside_the_driver(ray: Any) -> dict[str, Any]:
    """The progress queue's actor options: on the driver's node (a hard affinity), taking
    no CPU, so that a head with ``num_cpus=0`` holds it and no measuring slot's CPU goes."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    node = ray.get_runtime_context().get_node_id()
    return {"num_cpus": 0, "scheduling_strategy": NodeAffinitySchedulingStrategy(node, soft=False)}


def _drain(
    queue: Any, empty: type[Exception], progress: Callable[[str], None], stage: Path
) -> Any:
    """Print the lines waiting on ``queue``, a part's directory named where the driver
    writes it (``stage/part-I``, :data:`PART_DIR`); ``queue``, or ``None`` once its actor is
    gone."""
    import ray

    while queue is not None:
        try:
            index, host, line = queue.get_nowait()
        except empty:
            return queue
        except ray.exceptions.RayActorError as exc:
            progress(f"the parts' progress lines are lost from here on ({type(exc).__name__})")
            return None
        line = line.replace(PART_DIR, str(stage / f"part-{index}"))
        progress(f"part {index} on {host}: {line.removeprefix('edgeprof: ')}")
    return None


def _write(directory: Path, files: Mapping[str, bytes]) -> None:
    from ..outfiles import make_dirs, write_atomic

    for rel, data in files.items():
        if Path(rel).is_absolute() or ".." in Path(rel).parts:
            raise ConfigError(f"a part sent back a file outside its directory: {rel}")
        path = directory / rel
        make_dirs(path.parent)
        write_atomic(path, data)
