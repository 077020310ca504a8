"""Container images from an environment description (the older profiler's env.template).

A description — base image, apt and pip packages, pre-run commands, a directory to copy in —
becomes a deterministic Dockerfile.  The image is tagged by a content hash of everything that
goes into it (the Dockerfile text and every file of the directory: path, mode, bytes), so an
unchanged environment is never rebuilt and a changed file always is.  A user Dockerfile
supersedes the description; its directory is the build context and is hashed the same way,
less edgeprof's own outputs there (:attr:`EnvSpec.ignore`).
Images edgeprof builds carry :data:`MANAGED_LABEL`, which ``edgeprof gc --images`` removes.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import posixpath
import re
import shlex
import stat
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TextIO

from ...errors import BackendError, ConfigError, LaunchError
from ...known_outputs import edgeprof_output_dir, edgeprof_report
from .daemon import MANAGED_LABEL, explain
from .engine import DaemonError, Engine, NotFound

IMAGE_REPO = "edgeprof-env"
HASH_LABEL = "org.edgeprof.env-hash"
APP_DIR = "/app"
# Package names only: a name can never smuggle a shell word into a RUN line.
_APT_NAME = re.compile(r"^[a-z0-9][a-z0-9+.\-]*(:[a-z0-9]+)?(=[A-Za-z0-9.+~:\-]+)?$")
_PIP_REQ = re.compile(
    r"^[A-Za-z0-9][A-Za-z0-9._\-]*(\[[A-Za-z0-9._,\-]+\])?"
    r"([<>=!~]=?[A-Za-z0-9.*+!\-]+(,[<>=!~]=?[A-Za-z0-9.*+!\-]+)*)?$"
)


@dataclass(frozen=True)
class EnvSpec:
    """What goes into the image.  ``prerun`` lines are the user's own shell commands, run at
    build time exactly as a Dockerfile ``RUN`` (that is what PRERUN has always meant)."""

    base_image: str | None = None
    apt: tuple[str, ...] = ()
    pip: tuple[str, ...] = ()
    prerun: tuple[str, ...] = ()
    directory: Path | None = None
    dockerfile: Path | None = None
    ignore: tuple[str, ...] = ()
    """Context paths (relative to the Dockerfile's directory, ``/``-separated; a ``*`` in the
    last part matches within it) left out of the context and its hash: this run's own outputs,
    named by its options.  An env.template's OUTPUTFILE sits in the directory edgeprof is
    started in, its usual DOCFILE's context, and is appended to by every run: kept in, it
    changed the tag of every run (21 images in ~3 minutes of testing), the very rebuild the
    hash exists to avoid.  Earlier runs' outputs are left out by their content, whatever
    they were named: a directory holding edgeprof's ``result.json`` or ``sweep.json``, and a
    report file with edgeprof's mark (:mod:`edgeprof.resultfiles`: ``edgeprof_output_dir``,
    ``edgeprof_report``).  By name alone, ``--out resA``, ``resB``, ``resC`` had built two
    new images, each earlier directory a change of the next run's context.  By content, as
    the names are the user's; by a mark, as a false match would leave a file of the user's
    out of the image, silently."""

    def validate(self) -> None:
        if self.dockerfile is not None:
            if not self.dockerfile.is_file():
                raise ConfigError(f"Dockerfile {self.dockerfile} does not exist")
            return
        if not self.base_image:
            raise ConfigError("an environment needs a base image (IMAGEREPO / --base-image)")
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._/:@\-]*", self.base_image):
            raise ConfigError(f"invalid base image name {self.base_image!r}")
        for name in self.apt:
            if not _APT_NAME.match(name):
                raise ConfigError(f"invalid apt package name {name!r}")
        for req in self.pip:
            if not _PIP_REQ.match(req):
                raise ConfigError(f"invalid pip requirement {req!r} (one name[extras]specifier)")
        for line in self.prerun:
            if "\n" in line or "\0" in line:
                raise ConfigError("a pre-run command must be one line")
        if self.directory is not None and not self.directory.is_dir():
            raise ConfigError(f"environment directory {self.directory} does not exist")


def dockerfile_text(spec: EnvSpec) -> str:
    """The generated Dockerfile: a pure function of the description (same input, same text)."""
    if spec.dockerfile is not None:
        return spec.dockerfile.read_text()
    lines = [f"FROM {spec.base_image}"]
    if spec.apt:
        pkgs = " ".join(shlex.quote(p) for p in spec.apt)
        lines.append(
            "RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "
            f"--no-install-recommends {pkgs} && rm -rf /var/lib/apt/lists/*"
        )
    if spec.pip:
        reqs = " ".join(shlex.quote(r) for r in spec.pip)
        lines.append(f"RUN python3 -m pip install --no-cache-dir {reqs}")
    if spec.directory is not None:
        lines.append(f"COPY app/ {APP_DIR}/")
    lines.append(f"WORKDIR {APP_DIR}")
    lines.extend(f"RUN {cmd}" for cmd in spec.prerun)
    return "\n".join(lines) + "\n"


def _context_files(spec: EnvSpec) -> Iterator[tuple[str, Path]]:
    """(name in the build context, host path) for every file, in a stable order."""
    root = spec.dockerfile.parent if spec.dockerfile is not None else spec.directory
    prefix = "" if spec.dockerfile is not None else "app/"
    if root is None:
        return
    for dirpath, dirnames, filenames in os.walk(root):
        rel = Path(dirpath).relative_to(root).as_posix()
        dirnames[:] = sorted(d for d in dirnames if not _left_out(spec, dirpath, rel, d, True))
        for name in sorted(filenames):
            if _left_out(spec, dirpath, rel, name, False):
                continue
            p = Path(dirpath) / name
            yield prefix + str(p.relative_to(root)), p


def _left_out(spec: EnvSpec, dirpath: str, rel: str, name: str, folder: bool) -> bool:
    """Whether ``name`` in ``dirpath`` (``rel`` in the context) is one of edgeprof's outputs
    (:attr:`EnvSpec.ignore`); only a Dockerfile's context has them, an environment's DIR is
    the user's alone."""
    if spec.dockerfile is None:
        return False
    if _ignored(_join(rel, name), spec.ignore):
        return True
    path = Path(dirpath) / name
    return edgeprof_output_dir(path) if folder else edgeprof_report(path)


def _join(directory: str, name: str) -> str:
    return name if directory == "." else f"{directory}/{name}"


def _ignored(name: str, patterns: tuple[str, ...]) -> bool:
    """Whether ``name`` (a context path) is one of ``patterns``: the same directory, and a
    last part that matches (a ``*`` never reaches into a subdirectory)."""
    head, tail = posixpath.split(name)
    return any(
        posixpath.dirname(p) == head and fnmatchcase(tail, posixpath.basename(p))
        for p in patterns
    )


def content_hash(spec: EnvSpec) -> str:
    """sha256 of the Dockerfile and every context file's name, mode and bytes."""
    h = hashlib.sha256()
    h.update(dockerfile_text(spec).encode())
    for name, path in _context_files(spec):
        st = path.lstat()
        h.update(f"\0{name}\0{stat.S_IMODE(st.st_mode):o}\0".encode())
        h.update(os.readlink(path).encode() if path.is_symlink() else path.read_bytes())
    return h.hexdigest()


def image_tag(spec: EnvSpec) -> str:
    return f"{IMAGE_REPO}:{content_hash(spec)[:16]}"


def _context_tar(spec: EnvSpec) -> bytes:
    """The build context in memory, with fixed owners and times (deterministic)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        text = dockerfile_text(spec).encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size, info.mtime, info.mode = len(text), 0, 0o644
        tar.addfile(info, io.BytesIO(text))
        for name, path in _context_files(spec):
            if name == "Dockerfile" and spec.dockerfile is not None:
                continue
            info = tar.gettarinfo(str(path), arcname=name)
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            if info.isreg():
                with path.open("rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)
    return buf.getvalue()


def ensure_image(client: Engine, spec: EnvSpec, log: TextIO) -> tuple[str, bool]:
    """The image for ``spec``: (tag, built).  Builds only when no image has this tag.

    The build streams to ``log`` (so the failing step's output is the last thing there); a
    failure raises :class:`LaunchError` naming the step.  Builds use the host's network
    (the daemon may have no bridge).
    """
    spec.validate()
    tag = image_tag(spec)
    try:
        client.image(tag)
        return tag, False
    except NotFound:
        pass
    except DaemonError as exc:
        raise LaunchError(f"cannot query images: {explain(exc)}") from exc
    step, error = "", None
    try:
        query = {
            "t": tag,
            "rm": True,
            "forcerm": True,
            "networkmode": "host",
            "labels": {MANAGED_LABEL: "1", HASH_LABEL: content_hash(spec)},
        }
        for chunk in client.build(_context_tar(spec), query):
            text = chunk.get("stream") or ""
            if text:
                log.write(text)
                log.flush()
                for line in text.splitlines():
                    if line.startswith("Step "):
                        step = line.strip()
            if "error" in chunk:
                error = chunk.get("error") or json.dumps(chunk.get("errorDetail"))
    except DaemonError as exc:
        error = explain(exc)
    if error is not None:
        raise LaunchError(f"image build failed at {step or 'the first step'}: {str(error).strip()}")
    return tag, True


def managed_images(client: Engine) -> list[tuple[str, list[str]]]:
    """Every image edgeprof built: its id and its tags (``edgeprof gc --images`` removes
    them, ``--dry-run`` lists them)."""
    try:
        listed = client.images(f"{MANAGED_LABEL}=1")
    except DaemonError as exc:
        raise BackendError(f"cannot list the Docker daemon's images: {explain(exc)}") from exc
    out = []
    for image in listed:
        tags = [t for t in image.get("RepoTags") or () if t != "<none>:<none>"]
        out.append((str(image["Id"]), tags))
    return out


def remove_image(client: Engine, image_id: str, tags: list[str]) -> bool:
    """Remove one image edgeprof built; ``False`` when it was gone already."""
    try:
        client.remove_image(image_id)
    except NotFound:  # gone meanwhile
        return False
    except DaemonError as exc:
        raise BackendError(f"cannot remove image {tags or image_id}: {explain(exc)}") from exc
    return True
