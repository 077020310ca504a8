"""The files and directories edgeprof creates: never through another user's link, owned by
the person who asked for them.

edgeprof usually runs as root (or under sudo), and its output directory may be writable by
others (a shared results tree, ``/tmp``).  Whoever can write there could plant a link at a name
edgeprof writes (``samples.csv`` → ``/etc/passwd``) and have root overwrite the link's target.
So every output goes through this module:

- A file is opened at its directory's descriptor with ``O_NOFOLLOW`` (new files with
  ``O_EXCL``, then renamed into place): an existing link, FIFO, device or hard-linked file at
  its name is an :class:`~edgeprof.errors.UnsafeOutput` error and nothing is written.
- The directories on the way are walked one component at a time (``openat`` with
  ``O_PATH | O_NOFOLLOW``), so none can be swapped for a link between a check and a write.  A
  link on the way is followed only when it belongs to root or to the person running edgeprof
  (``SUDO_UID`` under sudo): the rule the kernel's ``fs.protected_symlinks`` applies in sticky
  directories.  A missing directory is created with ``mkdirat``.
- A run's or a sweep's output directory is held (:mod:`edgeprof.held_dirs`) from before its
  workload starts to its last file: the workload (under sudo, the user those links are trusted for)
  can act meanwhile, so each later walk must end at the very directory held, and under it
  only root's links are followed.
- Under sudo every directory and file created is handed to ``SUDO_UID:SUDO_GID`` with ordinary
  modes (0755 and 0644, less the umask), so the user who asked can read, upload and remove it;
  :func:`keep_root` (``--as-root``) keeps root's.

Written over ``os`` calls by hand: the standard library's ``pathlib``/``tempfile`` follow links,
and no package among our dependencies walks a path by descriptor.
"""

from __future__ import annotations

import contextlib
import errno
import os
import pwd
import stat
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from pathlib import Path

from . import held_dirs
from .errors import ConfigError, OutputReplaced, UnsafeOutput
from .names import has_control, printable

_DIR = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC
_MAX_LINKS = 40
"""Links followed in one walk: the kernel's own limit for one lookup (``MAXSYMLINKS``)."""

_keep_root: ContextVar[bool] = ContextVar("edgeprof_keep_root", default=False)


def keep_root(flag: bool = True) -> None:
    """Outputs created from now on (in this context) stay root's: ``--as-root``."""
    _keep_root.set(flag)


ID_NONE = (1 << 32) - 1
"""``(uid_t) -1``: no id, which setuid(2) and setgid(2) refuse (it had passed as digits and
failed in the child as "could not start … inside its cgroup")."""


def sudo_ids(
    environ: Mapping[str, str] | None = None, euid: int | None = None
) -> tuple[int, int] | None:
    """``(uid, gid)`` of the user who ran ``sudo edgeprof``; ``None`` unless edgeprof runs as
    root through sudo for a non-root user.  A missing ``SUDO_GID`` is that user's primary
    group.  A malformed id is a :class:`ConfigError`: guessing an identity is worse than
    stopping."""
    env = os.environ if environ is None else environ
    if (os.geteuid() if euid is None else euid) != 0:
        return None
    uid_text = env.get("SUDO_UID")
    if not uid_text:
        return None
    gid_text = env.get("SUDO_GID", "")

    def an_id(text: str) -> bool:  # (uid_t)-1, 4294967295, is "no id" to setuid(2)
        return text.isascii() and text.isdigit() and len(text) <= 10 and int(text) < ID_NONE

    if not an_id(uid_text) or (gid_text and not an_id(gid_text)):
        raise ConfigError(
            f"SUDO_UID={uid_text!r} SUDO_GID={gid_text!r}: not user and group ids (0 to "
            f"{ID_NONE - 1}); run edgeprof through sudo unchanged, or pass --as-root"
        )
    uid = int(uid_text)
    if uid == 0:
        return None
    if gid_text:
        return uid, int(gid_text)
    try:
        return uid, pwd.getpwuid(uid).pw_gid
    except KeyError:
        return uid, uid


def owner() -> tuple[int, int] | None:
    """Whom new outputs are handed to (``None``: keep edgeprof's own identity)."""
    return None if _keep_root.get() else sudo_ids()


def _trusted(uid: int) -> bool:
    ids = sudo_ids()
    return uid in (0, os.geteuid()) or (ids is not None and uid == ids[0])


def _parts(text: str) -> list[str]:
    return [p for p in text.split("/") if p not in ("", ".")]


def _chown_at(name: str, dir_fd: int) -> None:
    ids = owner()
    if ids is not None:
        os.chown(name, *ids, dir_fd=dir_fd, follow_symlinks=False)


def _walk(path: Path, create: bool, below: int | None = None) -> int:
    """An ``O_PATH`` descriptor of the directory ``path``, reached one component at a time;
    missing components are created when ``create``.  Raises :class:`UnsafeOutput` for another
    user's link on the way, :class:`OutputReplaced` where ``path`` is in a held directory
    (:mod:`edgeprof.held_dirs`) that is no longer the one held, ``OSError`` otherwise.
    ``below``: only held directories whose absolute path is shorter count (walking a held
    one itself)."""
    text = os.fspath(path)
    absolute = os.path.abspath(text)
    held = held_dirs.held_above(absolute, len(absolute) + 1 if below is None else below)
    if held is None:
        fd = os.open("/" if text.startswith("/") else ".", _DIR)
        return _walk_from(fd, _parts(text), create, path, None)
    # The rest from the held directory's descriptor, checked to be the one held: never
    # through what the path names now.
    return _walk_from(_open_held(held), _parts(absolute[len(held) :]), create, path, held)


def _open_held(key: str) -> int:
    """An ``O_PATH`` descriptor of the held directory ``key``, walked as any other path, that
    is the directory held; :class:`OutputReplaced` where it is not, or is gone."""
    given, dev, ino = held_dirs.identity(key)
    replaced = OutputReplaced(
        f"the output directory {given} was replaced during the run (moved, removed, or "
        "swapped for a link or another directory); edgeprof writes nothing through it"
    )
    try:
        fd = _walk(Path(key), create=False, below=len(key))
    except OutputReplaced:
        raise
    except (UnsafeOutput, FileNotFoundError, NotADirectoryError) as exc:
        raise replaced from exc
    st = os.fstat(fd)
    if (st.st_dev, st.st_ino) != (dev, ino):
        os.close(fd)
        raise replaced
    return fd


def _walk_from(fd: int, todo: list[str], create: bool, path: Path, held: str | None) -> int:
    """:func:`_walk` from the directory ``fd`` (taken over: closed on error) down ``todo``.
    ``held``: the held directory ``fd`` is, whose links are followed only where root's."""
    text = os.fspath(path)
    links = 0
    try:
        while todo:
            part = todo[0]
            try:
                nxt = os.open(part, _DIR | os.O_NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):  # another run made it meanwhile
                    os.mkdir(part, 0o755, dir_fd=fd)
                    _chown_at(part, fd)
                continue
            except OSError as exc:
                # O_PATH|O_NOFOLLOW|O_DIRECTORY on a link: ENOTDIR (ELOOP on older kernels).
                if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
                    raise
                st = os.stat(part, dir_fd=fd, follow_symlinks=False)
                if not stat.S_ISLNK(st.st_mode):
                    raise
                _check_link(path, part, st.st_uid, held)
                links += 1
                if links > _MAX_LINKS:
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), text) from None
                target = os.readlink(part, dir_fd=fd)
                if target.startswith("/"):
                    os.close(fd)
                    fd = os.open("/", _DIR)
                todo[:1] = _parts(target)
                continue
            os.close(fd)
            fd = nxt
            todo.pop(0)
        return fd
    except BaseException:
        os.close(fd)
        raise


def _check_link(path: Path, part: str, uid: int, held: str | None) -> None:
    """Refuse the link ``part`` of ``uid`` on the way to ``path`` unless it may be followed:
    anywhere, root's and the person's running edgeprof (``SUDO_UID`` too); inside a held
    directory (:mod:`edgeprof.held_dirs`), only root's and edgeprof's own user's.  Under
    sudo the workload runs as ``SUDO_UID`` and had made a sweep's ``run/2`` its link to a
    root-only directory during the first run, where root then wrote the second run's files
    (a security tester's)."""
    if held is None and _trusted(uid):
        return
    if held is not None and uid in (0, os.geteuid()):  # under sudo: root's only
        return
    if held is None:
        raise UnsafeOutput(
            f"cannot write under {path}: {part} is a link owned by uid {uid}; "
            "edgeprof follows only root's and your own links"
        ) from None
    given = held_dirs.given(held)
    raise OutputReplaced(
        f"cannot write under {path}: {part} is a link owned by uid {uid} in the output "
        f"directory {given}, where a run's workload can make one; edgeprof follows only its "
        "own user's and root's links there"
    ) from None


@contextlib.contextmanager
def _directory(path: Path, create: bool = False) -> Iterator[int]:
    fd = _walk(path, create)
    try:
        yield fd
    finally:
        os.close(fd)


def _refuse(path: Path, what: str) -> UnsafeOutput:
    return UnsafeOutput(f"cannot write {path}: {what}; edgeprof writes only plain files of its own")


def _check_name(path: Path, dir_fd: int) -> None:
    """What is at ``path`` now may be replaced by a rename: anything but a link or a plain
    file (or nothing) is refused, so a planted link is an error, never silently replaced."""
    try:
        st = os.stat(path.name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        raise _refuse(path, "it is a link")
    if stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"cannot write {path}: it is a directory")
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(path, "it is not a plain file")
    if st.st_nlink > 1:
        raise _refuse(path, f"it has {st.st_nlink} hard links")


def open_dir(path: Path) -> int:
    """A read descriptor (``O_RDONLY | O_DIRECTORY | O_CLOEXEC``) of the directory ``path``,
    reached as a write reaches it (:func:`_walk`): what :class:`edgeprof.dirlock.DirLock`
    locks and :func:`~edgeprof.held_dirs.hold` pins."""
    with _directory(path) as d:
        return os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=d)


def make_dirs(path: Path) -> Path:
    """Create ``path`` and its missing parents (each handed to the sudo user); ``path``.
    Nothing is made under :data:`KERNEL_TREES`: ``--out /sys/fs/cgroup/cpu/x/a/b`` had
    made three cgroups before its ``result.json`` was refused (a security review's)."""
    check_not_kernel(path)
    with _directory(path, create=True):
        return path


KERNEL_TREES = (Path("/proc"), Path("/sys"))
"""The kernel's own files: a write there is a setting (``/sys/kernel/mm/…``) or is refused
only once the run is over (``/proc/self/attr/current``: EINVAL from the append, after the
workload had run; root passes every check of the directory there)."""


def check_not_kernel(path: Path) -> None:
    """Refuse ``path`` (a file or a directory, made or not) where it resolves, through every
    link, into :data:`KERNEL_TREES`: one :class:`ConfigError` line, before anything is made
    there."""
    real = Path(os.path.realpath(path))
    for tree in KERNEL_TREES:
        if real == tree or tree in real.parents:
            raise ConfigError(f"cannot write {path}: {tree} holds the kernel's files, not outputs")


def check_name_text(path: Path, action: str = "write") -> None:
    """Refuse a name no file system takes, as one :class:`ConfigError`: a NUL (Python's
    ValueError "embedded null byte" had been a traceback), a part over 255 bytes
    (``NAME_MAX``: ``--out`` of 300 characters had been ENAMETOOLONG's traceback), or a path
    over 4095 bytes (``PATH_MAX``), or a control character (a tab, a newline, an escape)."""
    text = os.fsencode(path)
    if b"\0" in text:
        raise ConfigError(f"cannot {action} {path!r}: the name holds a NUL byte")
    if has_control(os.fsdecode(text)):
        # The result files record their files' paths, and a result's strings are read
        # back only without control characters: ``--out $'o\tx'`` had written a result
        # that ``report`` then refused (a reviewer's).
        raise ConfigError(
            f"cannot {action} {printable(str(path))}: the name holds a control character"
        )
    if len(text) >= 4096 or any(len(part) > 255 for part in text.split(b"/")):
        raise ConfigError(
            f"cannot {action} {path}: a name over 255 bytes, or a path over 4095, is longer "
            "than a file system takes"
        )


_NOT_THERE = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP})
"""What ``Path.exists()`` takes for "no such file" (``pathlib``'s ignored errors); any other
error of looking a path up, EACCES first, it raises instead of answering."""


def check_path(path: Path, action: str = "write") -> None:
    """:func:`check_name_text`, and ``path`` can be looked up: where a directory on the way
    may not be entered, a :class:`ConfigError` naming it.  The one check of a user-given path
    before ``exists()``/``is_dir()``/``is_file()``, which on Python 3.11 raise PermissionError
    (EACCES) rather than answer: as a non-root user, ``run --out /root/x``, ``--markdown
    /root/r.md``, ``report /root/x``, ``edgeprof.load("/root/x")`` had each been a traceback
    and exit 1.  ``path/.`` is looked up too, so that a directory the user may not enter is
    refused here rather than at its first file (``/root/x/sweep.json``)."""
    check_name_text(path, action)
    for name in (path, os.path.join(path, ".")):  # a Path drops "."
        try:
            os.stat(name)
        except OSError as exc:
            if exc.errno in _NOT_THERE:
                return
            barred = _barred(path) if exc.errno == errno.EACCES else None
            why = f" (cannot enter {barred})" if barred is not None else ""
            raise ConfigError(f"cannot {action} {path}: {exc.strerror or exc}{why}") from exc


def _barred(path: Path) -> Path | None:
    """The first directory on ``path`` (``path`` itself last) that cannot be entered here."""
    for d in (*reversed(path.absolute().parents), path.absolute()):
        try:
            os.stat(os.path.join(d, "."))
        except PermissionError:
            return d
        except OSError:
            return None
    return None


def check_target(path: Path) -> None:
    """Refuse, before any work, a file that could not be written safely later: a name no
    file system takes, a file of the kernel's (:data:`KERNEL_TREES`), a link, a FIFO or
    device at its name, or another user's link on the way.  A directory not made yet is
    not an error: it is created, by :func:`make_dirs`, when the file is written.  Every
    refusal is one :class:`ConfigError` line."""
    check_name_text(path)
    check_not_kernel(path)
    try:
        with _directory(path.parent) as d:
            _check_name(path, d)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise as_error(path, exc) from exc


def write_atomic(path: Path, data: str | bytes | Iterable[bytes]) -> None:
    """``data`` (or its pieces, in order) to ``path`` through a new file (``O_EXCL``) in the
    same directory, ``fsync`` and a rename: readers never see half a file.  I/O errors are
    ``OSError`` (the caller says which file failed); the temporary file never stays."""
    pieces = (
        [data.encode()] if isinstance(data, str) else [data] if isinstance(data, bytes) else data
    )
    with _directory(path.parent) as d:
        _check_name(path, d)
        tmp = f".{path.name[:200]}.{os.urandom(4).hex()}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(tmp, flags, 0o644, dir_fd=d)
        try:
            try:
                ids = owner()
                if ids is not None:
                    os.fchown(fd, *ids)
                for piece in pieces:
                    view = memoryview(piece)
                    while view:
                        view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            _check_name(path, d)
            os.rename(tmp, path.name, src_dir_fd=d, dst_dir_fd=d)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=d)
            raise


def remove_files(directory: Path, names: Iterable[str]) -> list[str]:
    """Remove ``names`` from ``directory`` where each is a plain file; the names removed.

    An earlier run's file that this run will write again: left in place, a run killed or
    unable to save had left the earlier run's ``result.json`` as its own.  The directory is
    walked as a write walks it (another user's link on the way is :class:`UnsafeOutput`)
    and each name is unlinked at its descriptor, so no link is followed; anything but a
    plain file (a link, a FIFO, a directory: refused before the run by
    :func:`check_target`) stays.  A missing directory or name is nothing to remove."""
    removed = []
    try:
        with _directory(directory) as d:
            for name in names:
                try:
                    st = os.stat(name, dir_fd=d, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    with contextlib.suppress(FileNotFoundError):  # gone meanwhile: fine
                        os.unlink(name, dir_fd=d)
                        removed.append(name)
    except FileNotFoundError:
        pass
    return removed


def probe(directory: Path) -> None:
    """Create a file of a name no one else uses in ``directory`` (``O_EXCL``, 8 random
    bytes) and remove it at the directory's descriptor: the proof that it takes new files,
    which never touches a file of someone else's.  The probe had been
    ``.edgeprof-probe-<pid>``, opened without ``O_EXCL`` and unlinked by its path: a user's
    file of that name was deleted (a security review's)."""
    check_not_kernel(directory)
    with _directory(directory) as d:
        name = f".edgeprof-probe-{os.urandom(8).hex()}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        os.close(os.open(name, flags, 0o600, dir_fd=d))
        os.unlink(name, dir_fd=d)


def open_file(path: Path, *, append: bool = False) -> int:
    """A write descriptor of ``path`` (``O_CLOEXEC``), created if missing, emptied unless
    ``append``; refused (:class:`UnsafeOutput`) when the name is a link, not a plain file,
    or a file with other hard links (root would write through it into another file), and
    (:class:`ConfigError`) under :data:`KERNEL_TREES`, whose files take writes as settings
    (``$GITHUB_STEP_SUMMARY=/proc/sys/kernel/hostname`` had renamed the host)."""
    check_not_kernel(path)
    with _directory(path.parent) as d:
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(path.name, flags | (os.O_APPEND if append else 0), 0o644, dir_fd=d)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _refuse(path, "it is a link") from None
            if exc.errno == errno.ENXIO:  # a FIFO nobody reads: O_NONBLOCK kept us from hanging
                raise _refuse(path, "it is not a plain file") from None
            raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(path, "it is not a plain file")
        if st.st_nlink > 1:
            raise _refuse(path, f"it has {st.st_nlink} hard links")
        os.set_blocking(fd, True)
        if not append:
            os.ftruncate(fd, 0)
        ids = owner()
        # A shared summary file that already holds others' lines keeps its owner.
        if ids is not None and (not append or st.st_size == 0):
            os.fchown(fd, *ids)
    except BaseException:
        os.close(fd)
        raise
    return fd


def as_error(path: Path, exc: OSError) -> ConfigError:
    """An ``OSError`` of writing ``path`` as one line."""
    return ConfigError(f"cannot write {path}: {exc.strerror or exc}")
