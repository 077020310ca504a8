"""``python tests/fake_edgeprof.py ARGS…``: edgeprof's command line with the tests' scripted
backend registered as ``fake``, for a test that must run the CLI in a separate process; as
``fake-group``, its workload in edgeprof's process group, as the cgroup and process backends
spawn it (a terminal's Ctrl-C reaches both); ``fake-group`` touches ``group-asked`` in the
working directory once edgeprof has taken a stop signal (``FakeBackend``'s ``group_asked``).

Test-only: users have no switch that offers the fake.  Needs the checkout on ``PYTHONPATH``
(for ``tests.fakes``), as the tests that start it set.
"""

from __future__ import annotations

from pathlib import Path

from edgeprof.backends import register_backend
from edgeprof.cli import entry
from tests.fakes import FakeBackend

register_backend("fake", FakeBackend)
register_backend(
    "fake-group", lambda: FakeBackend(own_group=False, group_asked=Path("group-asked"))
)
entry()
