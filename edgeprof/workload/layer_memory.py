"""What the per-layer worker (:mod:`edgeprof.workload.layers`) measures of a layer's memory:
its parameters' and buffers' bytes, the process's resident set and its peak, and the tensor
storage its operators allocate.  Standard library and torch only, as the worker is: it runs
inside the measured process."""

from __future__ import annotations

import importlib
import weakref
from typing import Any


def state_bytes(module: Any) -> int:
    """Bytes of the module's parameters and buffers (each storage counted once)."""
    seen: set[int] = set()
    total = 0
    for t in [*module.parameters(), *module.buffers()]:
        ptr = t.untyped_storage().data_ptr()
        if ptr not in seen:
            seen.add(ptr)
            total += t.untyped_storage().nbytes()
    return total


class Rss:
    """The process's resident set and its high-water mark (``VmHWM``), which Linux lets a
    process reset for itself by writing 5 to ``/proc/self/clear_refs`` (Linux ≥ 4.0)."""

    def __init__(self) -> None:
        self.resettable = True

    def reset_peak(self) -> None:
        if self.resettable:
            try:
                with open("/proc/self/clear_refs", "w") as f:
                    f.write("5")
            except OSError:
                self.resettable = False

    @staticmethod
    def read() -> tuple[int | None, int | None]:
        """(current, peak) in bytes."""
        cur = peak = None
        try:
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        cur = int(line.split()[1]) * 1024
                    elif line.startswith("VmHWM:"):
                        peak = int(line.split()[1]) * 1024
        except OSError:
            pass
        return cur, peak


def allocation_tracker(torch: Any) -> Any:
    """A dispatch mode that counts the bytes of every tensor storage an operator creates while
    it is active, minus those freed since (a weakref finalizer per storage), and keeps the peak
    of that sum: the layer's peak tensor memory as the allocator hands it out, outputs
    included, inputs and weights excluded (they existed before)."""
    dispatch: Any = importlib.import_module("torch.utils._python_dispatch")
    tree_flatten = importlib.import_module("torch.utils._pytree").tree_flatten

    class Tracker(dispatch.TorchDispatchMode):  # type: ignore[misc]
        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            # Else torch wraps __torch_dispatch__ in torch._disable_dynamo, whose first call
            # imports torch._dynamo: seconds of CPU and tens of MB inside the measured run,
            # for a compiler this worker never uses.
            return False

        def __init__(self, existing: list[Any]) -> None:
            super().__init__()
            self.known = {t.untyped_storage().data_ptr() for t in existing}
            self.live = 0
            self.peak = 0

        def _freed(self, ptr: int, n: int) -> None:
            self.live -= n
            self.known.discard(ptr)

        def __torch_dispatch__(
            self, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            out = func(*args, **(kwargs or {}))
            for t in tree_flatten(out)[0]:
                if not isinstance(t, torch.Tensor):
                    continue
                storage = t.untyped_storage()
                ptr = storage.data_ptr()
                if ptr in self.known or storage.nbytes() == 0:
                    continue  # a view, an in-place result or an input: no new memory
                self.known.add(ptr)
                n = storage.nbytes()
                self.live += n
                self.peak = max(self.peak, self.live)
                weakref.finalize(storage, self._freed, ptr, n)
            return out

    return Tracker
