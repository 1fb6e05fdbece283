"""A one-node SLURM cluster on localhost for the sweep's integration test.

`start_cluster(folder)` starts munged, slurmctld and slurmd from Debian's `slurm-wlm` and
`munge` (`make slurm-test-deps` installs them) with a generated `slurm.conf` under `folder`:
no cgroups (proctrack/linuxproc, task/none), state and spool directories in `folder`, free
ports. Every step that fails raises `ClusterUnavailable` with the reason, which the test turns
into a printed skip; `Cluster.stop()` ends the daemons it started, by their process ids.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo")


class ClusterUnavailable(RuntimeError):
    """SLURM cannot start here; the message says which step failed and why."""


@dataclass
class Cluster:
    folder: Path
    conf: Path
    node: str
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        """What the SLURM client commands (sbatch, squeue, scancel) need: the config."""
        return {"SLURM_CONF": str(self.conf)}

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()

    def log_tail(self, lines: int = 20) -> str:
        found = []
        for name in ("munged.log", "slurmctld.log", "slurmd.log"):
            path = self.folder / name
            if path.exists():
                tail = path.read_text(errors="replace").splitlines()[-lines:]
                found.append(f"--- {name}\n" + "\n".join(tail))
        return "\n".join(found)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _memory_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    raise ClusterUnavailable("cannot read the machine's memory from /proc/meminfo")


def slurm_conf(folder: Path, node: str, munge_socket: Path) -> str:
    """A one-node configuration: this machine's CPUs and 90% of its memory, no cgroups."""
    user = "root" if os.geteuid() == 0 else os.environ.get("USER", "root")
    return "\n".join(
        [
            "ClusterName=robench-test",
            f"SlurmctldHost={node}(127.0.0.1)",
            f"SlurmctldPort={_free_port()}",
            f"SlurmdPort={_free_port()}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={munge_socket}",
            f"SlurmUser={user}",
            f"SlurmdUser={user}",
            f"StateSaveLocation={folder / 'state'}",
            f"SlurmdSpoolDir={folder / 'spool'}",
            f"SlurmctldPidFile={folder / 'slurmctld.pid'}",
            f"SlurmdPidFile={folder / 'slurmd.pid'}",
            f"SlurmctldLogFile={folder / 'slurmctld.log'}",
            f"SlurmdLogFile={folder / 'slurmd.log'}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "SchedulerType=sched/backfill",
            "MpiDefault=none",
            "ReturnToService=2",
            "KillWait=5",
            "JobCompType=jobcomp/none",
            "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none",
            f"NodeName={node} NodeAddr=127.0.0.1 CPUs={os.cpu_count() or 1} "
            f"RealMemory={int(_memory_mb() * 0.9)} State=UNKNOWN",
            "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
            "",
        ]
    )


def _spawn(cluster: Cluster, argv: list[str], log: str) -> None:
    handle = (cluster.folder / log).open("ab")
    try:
        process = subprocess.Popen(argv, stdout=handle, stderr=subprocess.STDOUT)
    except OSError as exc:
        raise ClusterUnavailable(f"cannot start {argv[0]}: {exc}") from None
    finally:
        handle.close()
    cluster.processes.append(process)
    time.sleep(0.3)
    if process.poll() is not None:
        raise ClusterUnavailable(
            f"{argv[0]} exited with code {process.returncode} at start:\n{cluster.log_tail()}"
        )


def _wait_for_node(cluster: Cluster, timeout_s: float = 30.0) -> None:
    env = {**os.environ, **cluster.env}
    deadline = time.monotonic() + timeout_s
    state = ""
    while time.monotonic() < deadline:
        run = subprocess.run(
            ["sinfo", "-h", "-N", "-o", "%T"], env=env, capture_output=True, text=True, check=False
        )
        state = (run.stdout or run.stderr).strip()
        if run.returncode == 0 and state.rstrip("*") in ("idle", "mixed", "allocated"):
            return
        time.sleep(0.5)
    raise ClusterUnavailable(
        f"the node did not become idle in {timeout_s:.0f} s (sinfo: {state!r}):\n"
        + cluster.log_tail()
    )


def start_cluster(folder: Path) -> Cluster:
    """Start munged, slurmctld and slurmd under `folder`; raise ClusterUnavailable if any
    step fails (the daemons already started are stopped)."""
    missing = [name for name in DAEMONS if shutil.which(name) is None]
    if missing:
        raise ClusterUnavailable(
            f"{', '.join(missing)} not on PATH; install Debian's slurm-wlm and munge "
            "(make slurm-test-deps)"
        )
    if os.geteuid() != 0:
        raise ClusterUnavailable("starting slurmd needs root (it runs jobs as their user)")
    folder.mkdir(parents=True, exist_ok=True)
    for sub in ("state", "spool", "munge"):
        (folder / sub).mkdir(exist_ok=True)
    node = socket.gethostname().split(".")[0]
    cluster = Cluster(folder, folder / "slurm.conf", node)
    munge = folder / "munge"
    key = munge / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    munge.chmod(0o700)
    munge_socket = munge / "munge.socket"
    cluster.conf.write_text(slurm_conf(folder, node, munge_socket))
    try:
        _spawn(
            cluster,
            [
                "munged",
                "--foreground",
                "--force",
                f"--key-file={key}",
                f"--socket={munge_socket}",
                f"--pid-file={munge / 'munged.pid'}",
                f"--log-file={folder / 'munged.log'}",
                f"--seed-file={munge / 'munged.seed'}",
            ],
            "munged.out",
        )
        conf = ["-f", str(cluster.conf)]
        _spawn(cluster, ["slurmctld", "-D", "-i", *conf], "slurmctld.out")
        _spawn(cluster, ["slurmd", "-D", "-N", node, *conf], "slurmd.out")
        _wait_for_node(cluster)
    except BaseException:
        cluster.stop()
        raise
    return cluster
