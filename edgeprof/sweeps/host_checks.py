"""Stages 2 and 3 of a run request (:mod:`edgeprof.sweeps.request`): the host checked and the
backend opened, each refusing a bad input before a run costs anything; a limit this host
cannot honour names where it came from (the device, the template's line)."""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from ..backends import get_backend
from ..errors import BackendUnavailable, ConfigError, CoresBusy, LimitError
from ..measure.gpu_select import check_gpus
from ..measure.inputs import check_command
from ..measure.limits import device_refusal
from ..measure.privilege import workload_user
from ..outfiles import keep_root
from .plan import SweepPlan
from .request import RunJob, parse_env
from .sweep import check_limits


@contextlib.contextmanager
def _limits_named(job: RunJob) -> Iterator[None]:
    """A limit this host cannot honour names the device or the template line it came from
    (a 4-core board's ``--cpus 4`` on a 2-core host is the device's, and a template's
    ``DOCKCPUS=4`` its line's, not an option the user typed)."""
    try:
        yield
    except CoresBusy:
        raise  # the cores exist; other runs hold them
    except LimitError as exc:
        if job.device is not None:
            raise device_refusal(job.device, exc, job.request.device_replaced) from exc
        # "--cpus 4: …", "--cpus/--cpuset: …" and "--memory: the process backend cannot …"
        origin = next((o for opt, o in job.limits_from if _names(str(exc), opt)), None)
        if origin is None:
            raise
        raise LimitError(f"{origin}: {exc}") from exc


def _names(message: str, option: str) -> bool:
    """``message`` is about ``option``: it starts with the option then a space, a colon or
    a slash (a refusal of two options at once)."""
    return message.startswith(option) and message[len(option) : len(option) + 1] in (" ", ":", "/")


def check_host(job: RunJob) -> RunJob:
    """Stage 2: the workload's identity (under sudo) and, on a host backend, its program
    and its limits (the backend opened, and kept in the job)."""
    req = job.request
    run_as = workload_user(req.as_root)
    keep_root(req.as_root)  # outputs belong to whom the workload runs as
    if req.gpus not in (None, "none"):
        check_gpus(req.gpus)  # NVML and the GPUs named: before any run (each run opens its own)
    if req.backend == "docker":
        return dataclasses.replace(job, run_as=run_as)
    if req.cwd is None or req.cwd.is_dir():
        # A missing program is a bad input: refused before any warning is said (one line).
        try:
            check_command(job.plan.command, {**os.environ, **parse_env(req.env)}, req.cwd)
        except ConfigError as exc:
            if job.template is None:
                raise
            raise job.template.error("COMMAND", str(exc)) from exc  # the template's line
    be = get_backend(req.backend, cgroup_parent=req.cgroup_parent)
    with _limits_named(job):
        check_limits(job.plan, be)  # so is a limit this host cannot honour
    return dataclasses.replace(job, run_as=run_as, backend=be)


def check_part(job: RunJob, cpus: int, memory: int) -> None:
    """The job's limits against the backend it names, on a part of ``cpus`` CPUs and
    ``memory`` bytes elsewhere, as :func:`check_host` checks them here: a recipe had written
    ``--backend process --memory 256m`` into every part, each then refused where it ran.
    ``auto`` (and Docker's daemon) are the part's machine's to resolve, and a backend this
    host lacks (cgroup v2 where the parts run, not here) is not refused for it."""
    req = job.request
    if req.backend in ("auto", "docker"):
        return
    try:
        be = get_backend(req.backend, cgroup_parent=req.cgroup_parent)
    except BackendUnavailable:
        return
    with _limits_named(job):
        check_limits(job.plan, be, elsewhere=(cpus, memory))


def check_setting(job: RunJob, plan: SweepPlan) -> None:
    """``plan``'s limit settings against the job's opened backend, as :func:`check_host`
    checks the job's own (a refusal names the device or template line a limit came from):
    ``fit`` checks its ceiling, which none of its reference runs is given, so as ``run``
    would refuse it."""
    assert job.backend is not None
    with _limits_named(job):
        check_limits(plan, job.backend)


def open_backend(job: RunJob, log: TextIO) -> RunJob:
    """Stage 3: the Docker backend, its limits checked before its image is built (the build
    and an unchanged environment's reuse are told on ``log``); other backends open in
    :func:`execute`, unless the runs are squeezed: a backend that cannot squeeze is refused
    here, before any run."""
    if job.request.squeeze:
        # Said with the search that needs no reclaim: edgeprof fit's bisection sets memory
        # limits, which cgroup v1 and Docker enforce (checked on a cgroup v1 host: 61.4MiB
        # found in 5 runs).
        job = require_reclaim(
            job, "--squeeze", "edgeprof fit (without --one-run) bisects with limited runs instead"
        )
    return _open_docker(job, log)


def require_reclaim(job: RunJob, option: str, hint: str = "") -> RunJob:
    """The job with its backend opened, refused in one line (``option: why; hint``) when
    that backend cannot squeeze a run's memory (:meth:`Backend.reclaim_unavailable`)."""
    req = job.request
    be = job.backend or get_backend(req.backend, cgroup_parent=req.cgroup_parent)
    why = be.reclaim_unavailable()
    if why is not None:
        raise ConfigError(f"{option}: {why}" + (f"; {hint}" if hint else ""))
    return dataclasses.replace(job, backend=be)


def context_ignore(job: RunJob, root: Path) -> tuple[str, ...]:
    """edgeprof's own outputs inside a Dockerfile's build context ``root``, as
    :attr:`~edgeprof.backends.docker.image.EnvSpec.ignore` globs: the env.template's
    OUTPUTFILE and model logs, ``--out`` and the report files.  Each run changes them, and
    a context that held them was a new image every run."""
    req = job.request
    own = [] if job.template is None else list(job.template.own_outputs())
    own += [(p.parent, glob.escape(p.name)) for p in (*job.outputs, req.out) if p is not None]
    top = root.resolve()
    ignore = []
    for folder, name in own:
        rel = os.path.relpath(folder.resolve(), top)
        if rel != ".." and not rel.startswith("../"):
            ignore.append(name if rel == "." else f"{Path(rel).as_posix()}/{name}")
    return tuple(ignore)


def _open_docker(job: RunJob, log: TextIO) -> RunJob:
    req = job.request
    if req.backend != "docker":
        if req.docker_environment():
            raise ConfigError(
                "--image, --docker-args and environment options need --backend docker"
            )
        return job
    be = get_backend("docker", image=req.image, docker_args=req.docker_args)
    with _limits_named(job):
        check_limits(job.plan, be)
    image = req.image
    if req.base_image or req.dockerfile:
        from ..backends.docker import DockerBackend
        from ..backends.docker.image import EnvSpec, ensure_image

        assert isinstance(be, DockerBackend)  # get_backend("docker") makes one

        spec = EnvSpec(
            base_image=req.base_image,
            apt=req.apt,
            pip=req.pip,
            prerun=req.prerun,
            directory=req.env_dir,
            dockerfile=req.dockerfile,
            ignore=() if req.dockerfile is None else context_ignore(job, req.dockerfile.parent),
        )
        image, built = ensure_image(be.client, spec, log)
        if not built:
            print(f"edgeprof: environment unchanged, reusing image {image}", file=log)
    return dataclasses.replace(job, backend=be, request=dataclasses.replace(req, image=image))
