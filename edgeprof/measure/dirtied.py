"""The page cache a run dirtied, from its samples: what cgroup v1's block I/O written leaves out.

cgroup v1 charges a write to the blkio group of the task that submits it.  A buffered write
only dirties the page cache; the kernel's flusher writes it back later, from its own
context, and v1 charges that to no run group.  Measured here (Linux 6.18, cgroup v1), a
``dd if=/dev/zero of=FILE bs=1M count=64`` in a memory and a blkio group of its own:

* buffered: dirty + writeback rose to 62.0 MiB while it ran (64.0 MiB after its exit);
  blkio ``Write`` 0;
* ``conv=fsync``: 64.0 MiB dirty, then ``Write`` 67121152 (its fsync submits the pages);
* ``oflag=direct``: no dirty page; ``Write`` 67108864;
* to ``/dev/shm``: no dirty page (tmpfs is never written back); ``Write`` 0.

So where the group's memory held dirty or writeback pages, its written figure may lack them
(a run with fsync has them charged, one without has not: the counters cannot tell which), and
the pages it dirtied are the lower bound of its buffered writes.  ``pgpgout`` is no measure of
writes: it counts the group's uncharge events (285 in the buffered run, 286 in the direct
one, which dirtied nothing).  cgroup v2 charges the writeback to the page's group, so its
backend does not read these counters.
"""

from __future__ import annotations

from ..model import Counters

MARKED_FROM = 1 << 20
"""A run's written figure is marked a lower bound (``≥``, with its note) from this many bytes
dirtied: below it the figure is short by less than 1 MiB.  A quick start run's 4.1 kB
(a script's bytecode cache) had put the mark and its three-line note under a table whose
run wrote nothing of its own."""


class Dirtied:
    """The bytes of page cache a run dirtied, from the group's ``dirty`` + ``writeback`` at
    each reading: the sum of their rises from one reading to the next, from 0 (the run's
    group starts empty).  A page dirtied and written back again between two readings is not
    seen, nor one rewritten while still dirty (it is one write-back), so this is a lower
    bound.  Not the most at one reading: a run that wrote three 16 MiB files, each followed
    by ``sync`` (the flusher's writeback, as a long run's checkpoints get), dirtied 50.3 MB
    by the rises, where the most at one reading was one file's 16.8 MB, and its blkio
    written read 159.7 kB.  Pages moving from dirty to writeback keep the sum: only the end
    of a write-back lowers it."""

    __slots__ = ("_last", "bytes")

    def __init__(self) -> None:
        self._last = 0
        self.bytes: int | None = None
        """``None``: no reading had the counters (cgroup v2, the process backend)."""

    def add(self, c: Counters) -> None:
        if c.memory_dirty is None and c.memory_writeback is None:
            return
        now = (c.memory_dirty or 0) + (c.memory_writeback or 0)
        self.bytes = (self.bytes or 0) + max(0, now - self._last)
        self._last = now
