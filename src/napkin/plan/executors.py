"""Executors for grids too big for one process: a local pool, or dask.distributed, behind one
futures interface (``submit``, ``gather``, ``close``).

dask is an optional extra (``pip install llm-napkin[dask]``) and is imported only when a
DaskExecutor is made. Work submitted must be a module-level function of picklable
arguments, so the same call runs in a thread, a process or on a remote worker.
"""

from __future__ import annotations

from typing import Any, Callable

from napkin.errors import InputError

KINDS = ("none", "local", "dask")
# How long a dask client tries to reach its scheduler: one on the same network answers in milliseconds,
# and dask's own default (30 s) reads as a hang.
CONNECT_TIMEOUT_S = 4
SCHEMES = ("tcp", "tls", "ws", "wss", "ucx")
_ADDRESS = None


class LocalExecutor:
    """A concurrent.futures pool: threads by default (numpy's kernels release the GIL)."""

    def __init__(self, workers: int | None = None, *, processes: bool = False):
        from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

        pool = ProcessPoolExecutor if processes else ThreadPoolExecutor
        self.pool = pool(max_workers=workers)

    def submit(self, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        return self.pool.submit(fn, *args, **kwargs)

    def gather(self, futures: list) -> list:
        return [f.result() for f in futures]

    def close(self) -> None:
        self.pool.shutdown()

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class DaskExecutor:
    """dask.distributed: connect to a scheduler (``tcp://host:8786``) or start a local in-process cluster."""

    def __init__(self, address: str | None = None, workers: int | None = None):
        try:
            from distributed import Client, LocalCluster
        except ModuleNotFoundError:
            raise InputError("executor", "dask", "needs dask.distributed, which is not installed",
                             "pip install 'llm-napkin[dask]', or use --executor local") from None
        self.cluster = None
        if address:
            self.client = connect(Client, address)
        else:
            # no dashboard; the scheduler's own HTTP server (health, metrics) on a free port, not 8787: taking 8787
            # when another cluster holds it printed a warning ("Port 8787 is already in use")
            self.cluster = LocalCluster(processes=False, n_workers=workers or 1, threads_per_worker=1,
                                        dashboard_address=None,
                                        scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"})
            self.client = Client(self.cluster)

    def submit(self, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        return self.client.submit(fn, *args, pure=False, **kwargs)

    def gather(self, futures: list) -> list:
        return self.client.gather(futures)

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()

    def __enter__(self) -> DaskExecutor:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def check_address(address: str) -> str:
    """A dask scheduler address, ``[scheme://]host:port``; InputError naming it when it is not one."""
    import re

    global _ADDRESS
    if _ADDRESS is None:
        _ADDRESS = re.compile(r"(?:(?P<scheme>[a-z]+)://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(?P<port>\d{1,5})")
    m = _ADDRESS.fullmatch(address.strip())
    if not m or (m.group("scheme") or "tcp") not in SCHEMES or not 0 < int(m.group("port")) < 65536:
        raise InputError("scheduler", address, "is not a dask scheduler address",
                         f"write scheme://host:port, e.g. tcp://10.0.0.5:8786; schemes: {', '.join(SCHEMES)}")
    return address.strip()


def connect(client_cls: Any, address: str) -> Any:
    """A dask Client connected to the scheduler at ``address`` within CONNECT_TIMEOUT_S, else one InputError."""
    address = check_address(address)
    fix = "start one with `dask scheduler`, check the address, or use --executor local"
    try:
        return client_cls(address, timeout=CONNECT_TIMEOUT_S)
    except (OSError, TimeoutError) as exc:
        if isinstance(exc, TimeoutError) or "Timed out" in str(exc):
            raise InputError("scheduler", address, f"is not answering: no dask scheduler replied within "
                             f"{CONNECT_TIMEOUT_S} s", fix) from None
        raise InputError("scheduler", address, f"is not reachable ({type(exc).__name__})", fix) from None
    except Exception as exc:  # something else answered there (a web server's bytes read as a frame length)
        raise InputError("scheduler", address, f"is not a dask scheduler: what answered there does not speak "
                         f"dask's protocol ({type(exc).__name__})", fix) from None


def get_executor(kind: str, *, address: str | None = None, workers: int | None = None) -> Any:
    """``"local"`` -> LocalExecutor, ``"dask"`` -> DaskExecutor; ``"none"`` -> None (evaluate in process)."""
    if kind == "none":
        return None
    if kind == "local":
        return LocalExecutor(workers)
    if kind == "dask":
        return DaskExecutor(address, workers)
    raise InputError("executor", kind, "must be one of " + ", ".join(KINDS))
