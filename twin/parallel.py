"""Run independent tasks on local processes or on a Ray cluster, results in task order.

    run_tasks(fn, tasks, executor="local", workers=4)            # processes on this machine
    run_tasks(fn, tasks, executor="ray", address="local", workers=4)  # a local Ray cluster
    run_tasks(fn, tasks, executor="ray", address="ray://head:10001")  # an existing cluster

`fn` must be a module-level function (it is pickled by reference) and deterministic: the
results are then identical whatever the executor and the number of workers, since each task
carries everything it needs (its seed included) and results come back in task order.

Ray is an optional extra (`pip install fabtwin[ray]`), imported only when asked for; on a
cluster every node needs fabtwin installed (tasks name their function by module). When
`run_tasks` starts Ray itself it shuts it down at the end; a Ray already initialized in the
process (a test fixture, a benchmark) is used as it is. "local" always starts a new Ray here,
whatever RAY_ADDRESS says or a cluster already runs on the machine; a cluster address that does
not answer within FABTWIN_RAY_TIMEOUT_S seconds (default 30) is ExecutorError, not Ray's
minutes of silent retries.
"""

from __future__ import annotations

import logging
import multiprocessing
import socket
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from collectors.settings import ray_timeout_s  # FABTWIN_RAY_TIMEOUT_S

EXECUTORS = ("local", "ray")
# default ports: the Ray client server (ray://) and the GCS (a bare host:port or host)
RAY_CLIENT_PORT, RAY_GCS_PORT = 10001, 6379


class ExecutorError(RuntimeError):
    """An executor that cannot run here (Ray missing, a cluster that does not answer)."""


def run_tasks(fn: Callable[[Any], Any], tasks: Sequence[Any], executor: str = "local",
              workers: int = 1, address: str | None = None) -> list[Any]:
    """`[fn(t) for t in tasks]`, computed in parallel; the list is in task order.

    local: `workers` processes (1: in this process, no pickling). ray: `address` is "local"
    (start a Ray on this machine with `workers` CPUs), "auto" or "ray://host:port".
    """
    if executor not in EXECUTORS:
        raise ValueError(f"executor {executor!r} is not one of {', '.join(EXECUTORS)}")
    if workers < 1:
        raise ValueError("workers must be at least 1")
    tasks = list(tasks)
    if executor == "ray":
        return _run_ray(fn, tasks, workers, address or "local")
    if workers == 1 or len(tasks) <= 1:
        return [fn(t) for t in tasks]
    return _run_local(fn, tasks, workers)


def _run_local(fn: Callable[[Any], Any], tasks: list[Any], workers: int) -> list[Any]:
    # forkserver: safe with threads in this process (DuckDB, Ray), and its server imports
    # fn's module once, so that workers fork with numpy and the twin already loaded
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([fn.__module__])
    with ProcessPoolExecutor(max_workers=min(workers, len(tasks)), mp_context=ctx) as pool:
        return list(pool.map(fn, tasks))


def ray_module():
    """The `ray` module, or ExecutorError saying how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise ExecutorError("Ray is not installed: pip install 'fabtwin[ray]'") from exc
    return ray


def ray_init(address: str = "local", workers: int = 1) -> bool:
    """Connect to (or start) Ray unless it already runs here; True when this call started it."""
    ray = ray_module()
    if ray.is_initialized():
        return False
    opts = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.WARNING}
    try:
        if address == "local":  # explicit: ray.init() alone joins RAY_ADDRESS or a running cluster
            ray.init(address="local", num_cpus=workers, **opts)
        else:
            check_reachable(address)
            _bounded(lambda: ray.init(address=address, **opts), address)
    except ExecutorError:
        raise
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ExecutorError(f"Ray at {address}: {' '.join(str(exc).split())}") from exc
    return True


def _bounded(connect: Callable[[], Any], address: str) -> None:
    """`connect()` within `ray_timeout_s()`: on a daemon thread, since Ray's own retries cannot
    be bounded from outside (a proxy that accepts the TCP connection and never answers holds
    ray.init for minutes); past the limit the thread is abandoned and ExecutorError raised."""
    box: dict[str, BaseException] = {}

    def run() -> None:
        try:
            connect()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=run, name="fabtwin-ray-connect", daemon=True)
    thread.start()
    thread.join(ray_timeout_s())
    if thread.is_alive():
        raise ExecutorError(f"Ray at {address}: no answer within {ray_timeout_s():g} s "
                            "(FABTWIN_RAY_TIMEOUT_S sets another limit)")
    if "error" in box:
        raise box["error"]


def check_reachable(address: str) -> None:
    """ExecutorError unless a TCP connection to the cluster `address` ("ray://host[:port]",
    "host[:port]") opens within `ray_timeout_s()`; "auto" is Ray's own lookup, left to it."""
    if address == "auto":
        return
    rest = address.removeprefix("ray://")
    default = RAY_CLIENT_PORT if rest != address else RAY_GCS_PORT
    host, _, port = rest.rstrip("/").rpartition(":") if ":" in rest else (rest, "", "")
    try:
        port_no = int(port) if port else default
    except ValueError:
        raise ExecutorError(f"Ray at {address}: {port!r} is not a port "
                            "(ray://host:10001, host:6379, auto or local)") from None
    timeout = ray_timeout_s()
    try:
        with socket.create_connection((host.strip("[]") or "localhost", port_no), timeout=timeout):
            pass
    except TimeoutError:
        raise ExecutorError(f"Ray at {address}: no answer within {timeout:g} s "
                            "(FABTWIN_RAY_TIMEOUT_S sets another limit)") from None
    except OSError as exc:
        raise ExecutorError(f"Ray at {address}: cannot connect: {exc.strerror or exc}") from None


def _run_ray(fn: Callable[[Any], Any], tasks: list[Any], workers: int, address: str) -> list[Any]:
    ray = ray_module()
    started = ray_init(address, workers)
    try:
        remote = ray.remote(num_cpus=1)(_apply)
        return ray.get([remote.remote(fn, t) for t in tasks])  # in submission order
    finally:
        if started:
            ray.shutdown()


def _apply(fn: Callable[[Any], Any], task: Any) -> Any:
    """What a Ray task runs: any callable (builtins too), sent by reference."""
    return fn(task)
