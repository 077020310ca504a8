"""Read a file through the page cache, then hold MiB of anonymous memory: the example of
docs/memory.md, whose peak is mostly page cache that a memory limit can take back.

    python3 read_and_hold.py --create SIZE FILE    # once: FILE of SIZE MiB of random bytes
    python3 read_and_hold.py FILE MIB [--hold S]   # the workload edgeprof measures

The workload first drops FILE from the page cache (``posix_fadvise(DONTNEED)``), so that
every run reads it from storage and its page cache is charged to that run, not to an earlier
one; reads it through in 1 MiB chunks; then allocates MIB MiB and writes a byte of every page
(the kernel charges a page when it is written) and keeps both for ``--hold`` seconds (0.3 by
default), so that the sampler sees the page cache and the arrays together.

FILE must be on a disk filesystem: on tmpfs (often /tmp) its pages are shared memory,
charged to whoever wrote them, and are not page cache a limit can reclaim.  Standard library
only.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

MIB = 1 << 20


def create(path: str, size_mib: int) -> None:
    """``size_mib`` MiB of random bytes, written to storage and dropped from the page cache."""
    with open(path, "wb") as f:
        for _ in range(size_mib):
            f.write(os.urandom(MIB))
        f.flush()
        os.fsync(f.fileno())
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


def read_cold(path: str) -> int:
    """Drop ``path`` from the page cache, then read it through; its size in bytes."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        total = 0
        while chunk := os.read(fd, MIB):
            total += len(chunk)
        return total
    finally:
        os.close(fd)


def hold(mib: int) -> bytearray:
    """``mib`` MiB of anonymous memory, every page written."""
    buf = bytearray(mib * MIB)
    buf[::4096] = b"\x01" * len(buf[::4096])
    return buf


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", metavar="FILE", help="the file to read (the model)")
    ap.add_argument("mib", metavar="MIB", type=int, nargs="?", help="anonymous MiB to hold")
    ap.add_argument("--hold", type=float, default=0.3, help="seconds to hold (default 0.3)")
    ap.add_argument(
        "--create", type=int, metavar="SIZE", help="write FILE of SIZE MiB and exit (no run)"
    )
    args = ap.parse_args(argv)
    if args.create is not None:
        if args.create < 1 or args.mib is not None:
            ap.error("--create takes a size of at least 1 MiB and no MIB")
        create(args.file, args.create)
        print(f"{args.file}: {args.create} MiB")
        return 0
    if args.mib is None or args.mib < 0 or args.hold < 0:
        ap.error("MIB (>= 0) is required; --hold must be >= 0")
    read_cold(args.file)
    buf = hold(args.mib)  # the page cache of the file and these pages, together
    time.sleep(args.hold)
    del buf
    return 0


if __name__ == "__main__":
    sys.exit(main())
