"""A Ray cluster of several nodes on this machine, started the usual way (`ray start --head`, then `ray start
--address`) and stopped again by the tests that use it: each node with its own raylet, object store and CPUs,
all on ports and in a temporary folder of their own, so that other Ray instances on the machine are never
touched. Each `ray start --block` runs in a session of its own (its raylet, object store and workers inherit it,
though each worker makes its own process group), and stopping a node signals the processes of that session only:
never `ray stop`, which stops every Ray process of the user."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def ray_command() -> str | None:
    """The `ray` command of this Python's environment (None when Ray is not installed)."""
    beside = Path(sys.executable).with_name("ray")
    return str(beside) if beside.is_file() else shutil.which("ray")


def node_ip() -> str:
    """The address Ray gives this machine's nodes (the driver finds its local raylet by it)."""
    from ray.util import get_node_ip_address

    return get_node_ip_address()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalCluster:
    """Nodes started by `add_node`; `address` is the head's "ip:port"; `stop` ends them all (idempotent)."""

    def __init__(self, object_store_bytes: int = 80 * 2**20, auth_mode: str = "disabled"):
        """auth_mode: RAY_AUTH_MODE of the nodes and of `env`, the environment for processes that connect
        ("disabled": the cluster ignores any token another Ray user of the machine left in ~/.ray)."""
        self.temp = tempfile.mkdtemp(prefix="escov-ray-")  # short: Ray's socket paths live under it
        self.store, self.nodes, self.address, self.last_error = object_store_bytes, [], "", ""
        self.env = os.environ | {
            "PYTHONPATH": str(REPO),
            "RAY_USAGE_STATS_ENABLED": "0",
            "OMP_NUM_THREADS": "1",
            "RAY_AUTH_MODE": auth_mode,
        }
        self.env.pop("RAY_ADDRESS", None)

    def add_node(self, cpus: int, timeout_s: float = 90.0) -> subprocess.Popen:
        """Start a node (the head first) with `cpus` CPUs; returns its `ray start --block` process once the node
        has joined (ray.nodes() counts it)."""
        args = [
            ray_command(),
            "start",
            "--block",
            f"--num-cpus={cpus}",
            f"--object-store-memory={self.store}",
            f"--dashboard-agent-listen-port={free_port()}",
            f"--node-manager-port={free_port()}",
            f"--object-manager-port={free_port()}",
            f"--metrics-export-port={free_port()}",
            f"--runtime-env-agent-port={free_port()}",
            f"--dashboard-agent-grpc-port={free_port()}",
            "--disable-usage-stats",
        ]
        if not self.nodes:
            port = free_port()
            args += [
                "--head",
                f"--port={port}",
                "--include-dashboard=false",
                f"--dashboard-port={free_port()}",
                f"--ray-client-server-port={free_port()}",
                f"--temp-dir={self.temp}",
            ]
            self.address = f"{node_ip()}:{port}"
        else:
            args.append(f"--address={self.address}")
        log = open(Path(self.temp) / f"node-{len(self.nodes)}.log", "w")
        node = subprocess.Popen(args, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.nodes.append(node)
        self.wait_for_nodes(len(self.nodes), timeout_s)
        return node

    def alive_nodes(self) -> int:
        """How many nodes the cluster's control store counts as alive (asked in a fresh process)."""
        code = (
            "import ray; from escov.llm.es.options import token_auth_as_ray_start; token_auth_as_ray_start(); "
            "ray.init(address=%r, log_to_driver=False); print(sum(n['Alive'] for n in ray.nodes()))" % self.address
        )
        out = subprocess.run([sys.executable, "-c", code], env=self.env, capture_output=True, text=True, timeout=120)
        if out.returncode != 0 or not out.stdout.strip():
            self.last_error = out.stderr[-600:]
            return 0
        return int(out.stdout.strip().splitlines()[-1])

    def wait_for_nodes(self, count: int, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if any(n.poll() is not None for n in self.nodes):
                raise RuntimeError(f"a `ray start` exited early; its log: {self.log_tail()}")
            if self.alive_nodes() >= count:
                return
            time.sleep(1.0)
        raise RuntimeError(
            f"the cluster did not reach {count} nodes in {timeout_s:.0f} s; {self.last_error} {self.log_tail()}"
        )

    def log_tail(self) -> str:
        return " | ".join(p.read_text()[-400:] for p in sorted(Path(self.temp).glob("node-*.log")))

    def kill_node(self, node: subprocess.Popen) -> None:
        """SIGKILL every process of the node's session (its raylet, object store and workers), as a lost machine."""
        signal_session(node.pid, signal.SIGKILL)
        node.wait(timeout=30)

    def stop(self) -> None:
        """SIGTERM each node's session (the workers' nodes first), then SIGKILL what is left; the temporary folder
        goes."""
        for node in reversed(self.nodes):
            signal_session(node.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for node in reversed(self.nodes):
            try:
                node.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            signal_session(node.pid, signal.SIGKILL)  # raylet and co. outlive `ray start`'s exit
            try:
                node.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self.nodes = []
        shutil.rmtree(self.temp, ignore_errors=True)


def session_pids(session: int) -> list[int]:
    """The processes of a session (the session id is field 6 of /proc/PID/stat)."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:  # ended meanwhile
            continue
        if int(fields[3]) == session:
            pids.append(int(stat.parent.name))
    return pids


def signal_session(session: int, sig: int) -> None:
    for pid in session_pids(session):
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
