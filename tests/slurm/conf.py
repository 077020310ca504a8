"""The slurm tier's configuration files: ``slurm.conf`` and ``cgroup.conf`` (see
:func:`slurm_conf` for each choice)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from tests.slurm.host import half_memory_mib


def slurm_conf(
    *,
    cluster: str,
    node: str,
    partition: str,
    host: str,
    hw: Mapping[str, int],
    ctld_port: int,
    slurmd_port: int,
    d: Path,
) -> str:
    """The cluster's ``slurm.conf``.  Notes on the choices:

    * ``auth/none`` + ``cred/none``: no munged to run.  Anyone who can reach the two ports
      can act as any user for the session's lifetime (Slurm has no listen-address option).
    * ``SlurmctldHost`` must be this host's short name (slurmctld refuses to run elsewhere);
      ``(127.0.0.1)`` and ``NodeAddr=127.0.0.1`` keep DNS out of it.
    * The node line is ``slurmd -C``'s, with ``RealMemory`` half of this host's memory:
      memory is not scheduled (``CR_Core``) nor constrained, but a job's ``--mem`` (the
      Slurm recipe asks for one) is refused above ``RealMemory``; and a ``RealMemory``
      above what slurmd later finds (a ballooned VM) would drain the node.
    * ``MinJobAge=300``: finished jobs stay in the controller for :meth:`SlurmCluster.wait`
      (there is no accounting database, so ``sacct`` knows nothing).
    * ``batch_sched_delay=0``: a batch job is scheduled at its next scheduler pass (≈1 s)
      instead of up to 3 s later (the default; measured: 3.0 s → 1.0 s a job).
    * ``JobRequeue=0``: a job's final state is final.  ``KillWait=5``: a cancelled job gets
      SIGKILL 5 s after SIGTERM, so a stop is quick.
    * ``PlugStackConfig`` and ``MailProg`` point at our own empty file and ``/bin/true``:
      nothing in ``/etc/slurm`` is read.
    """
    node_hw = " ".join(
        f"{k}={hw[k]}"
        for k in ("CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore")
    )
    node_hw += f" RealMemory={half_memory_mib()}"
    return f"""\
# edgeprof slurm tier: a private single-node cluster (tests/slurm/cluster.py)
ClusterName={cluster}
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
PlugStackConfig={d}/plugstack.conf
MailProg=/bin/true
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
TaskPlugin=task/cgroup,task/affinity
ProctrackType=proctrack/cgroup
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MinJobAge=300
SchedulerParameters=batch_sched_delay=0
JobRequeue=0
KillWait=5
ReturnToService=2
NodeName={node} NodeHostname={host} NodeAddr=127.0.0.1 {node_hw} State=UNKNOWN
PartitionName={partition} Nodes={node} Default=YES MaxTime=INFINITE State=UP
"""


CGROUP_CONF = """\
# edgeprof slurm tier: cores constrained (cpuset), memory not
CgroupPlugin=cgroup/v1
ConstrainCores=yes
ConstrainRAMSpace=no
ConstrainSwapSpace=no
ConstrainDevices=no
"""
