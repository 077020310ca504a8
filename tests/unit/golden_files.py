"""The golden files of ``tests/unit/golden``: a text compared with its file, which
``EDGEPROF_UPDATE_GOLDEN=1`` rewrites after a deliberate change (then read the diff)."""

from __future__ import annotations

import os
from pathlib import Path

GOLDEN = Path(__file__).parent / "golden"


def golden(name: str, text: str) -> None:
    """Fail unless ``text`` is the golden file ``name``'s, saying how to rewrite it: the
    message had been "differs from its golden file", the switch in one test file's
    docstring, and the Auptimizer files had none."""
    path = GOLDEN / name
    if os.environ.get("EDGEPROF_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), (
        f"{name} differs from its golden file: after a deliberate change, run this test "
        f"again with EDGEPROF_UPDATE_GOLDEN=1 (it rewrites tests/unit/golden/{name}) and "
        "read git diff"
    )
