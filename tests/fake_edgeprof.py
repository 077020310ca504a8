"""``python tests/fake_edgeprof.py ARGS…``: edgeprof's command line with the tests' scripted
backend registered as ``fake``, for a test that must run the CLI in a separate process; as
``fake-group``, its workload in edgeprof's process group, as the cgroup and process backends
spawn it (a terminal's Ctrl-C reaches both).

Test-only: users have no switch that offers the fake.  Needs the checkout on ``PYTHONPATH``
(for ``tests.fakes``), as the tests that start it set.
"""

from __future__ import annotations

from edgeprof.backends import register_backend
from edgeprof.cli import entry
from tests.fakes import FakeBackend

register_backend("fake", FakeBackend)
register_backend("fake-group", lambda: FakeBackend(own_group=False))
entry()
