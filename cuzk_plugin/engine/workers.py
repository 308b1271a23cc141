"""Lifetime of the daemon's helper processes: they die with the daemon, their shared memory is
named after it (so a later daemon reclaims what a killed one left), and one-off work (key
generation) runs in a process of its own that a cancellation kills.

Linux only where it matters (PR_SET_PDEATHSIG, /dev/shm); elsewhere the calls do nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import logging.handlers
import multiprocessing
import os
import re
import secrets
import signal
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from cuzk_plugin.errors import CuzkError

log = logging.getLogger(__name__)

#: Shared-memory blocks of partitions: ``cuzk_<daemon pid>_<random>`` in /dev/shm.
SHM_PREFIX = "cuzk_"
_SHM_NAME = re.compile(rf"{SHM_PREFIX}(\d+)_[0-9a-f]+", re.ASCII)
SHM_DIR = Path("/dev/shm")
_PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int) -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (a daemon killed with -9
    leaves no synthesis worker behind); exit now if the parent is already gone."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            log.warning("prctl(PR_SET_PDEATHSIG) failed: errno %d", ctypes.get_errno())
    except (OSError, AttributeError):  # not Linux
        return
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


_task_processes = 1
_task_share: int | None = None
#: Added to each synthesis worker's niceness (its witness processes inherit it). The GPU lanes'
#: host threads in the daemon launch an MSM's kernels window by window and wait on its phases:
#: when every core is busy synthesizing at the same priority they wait for a core, and the GPU
#: idles meanwhile.
SYNTHESIS_NICENESS = 10


_param_cache: str | None = None


def worker_param_cache() -> str | None:
    """The engine's param cache, in a synthesis worker (None outside one, or in a pool made
    without it): warmers look there for the circuits this daemon proves."""
    return _param_cache


def task_processes() -> int:
    """Processes a task in this synthesis worker may use for one partition (a large PoRep
    witness is split across them): the engine's ``[synthesis] witness_processes``, or the share
    the engine gave this task (:func:`processes_for_task`)."""
    return _task_share or _task_processes


@contextlib.contextmanager
def processes_for_task(processes: int | None) -> Iterator[None]:
    """While a task runs: :func:`task_processes` says ``processes`` (None: the worker's own).
    The engine gives a job's first partitions the cores of the workers that would otherwise
    wait for them (:class:`~cuzk_plugin.engine.pipeline.PartitionPipeline`)."""
    global _task_share
    _task_share = max(1, processes) if processes else None
    try:
        yield
    finally:
        _task_share = None


def worker_init(parent_pid: int, processes: int = 1, warmers: tuple = (), param_cache: str | None = None,
                log_records=None, log_level: int = logging.INFO) -> None:
    """Initializer of every synthesis worker: dies with the daemon; SIGINT is the daemon's to
    handle; yields the CPU to the daemon's threads (:data:`SYNTHESIS_NICENESS`); ``processes``:
    what :func:`task_processes` says; ``param_cache``: what :func:`worker_param_cache` says;
    ``warmers``: zero-argument callables run now (a failing one is logged: its work is then
    done on first use); ``log_records``: a queue the worker's log records (from ``log_level``
    up) go to, for the daemon's loggers."""
    global _task_processes, _param_cache
    if log_records is not None:
        root = logging.getLogger()
        root.handlers[:] = [logging.handlers.QueueHandler(log_records)]
        root.setLevel(log_level)
    die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.nice(SYNTHESIS_NICENESS)
    _task_processes = max(1, processes)
    _param_cache = param_cache
    for warm in warmers:
        try:
            warm()
        except Exception:
            log.exception("synthesis worker warm-up %r failed", warm)


def shm_block_name(daemon_pid: int | None = None) -> str:
    """A new block's name, tagged with the daemon's pid (by default a worker's parent; the
    daemon passes its own)."""
    return f"{SHM_PREFIX}{daemon_pid or os.getppid()}_{secrets.token_hex(8)}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def reclaim_stale_blocks(shm_dir: Path = SHM_DIR) -> list[tuple[str, int]]:
    """Unlink partition blocks whose daemon is dead: [(name, bytes)]."""
    if not shm_dir.is_dir():
        return []
    gone = []
    for path in shm_dir.iterdir():
        m = _SHM_NAME.fullmatch(path.name)
        if not m or int(m.group(1)) == os.getpid() or _alive(int(m.group(1))):
            continue
        try:
            size = path.stat().st_size
            path.unlink()
        except OSError:  # another daemon reclaimed it first, or not ours to remove
            continue
        gone.append((path.name, size))
    return gone


def stop_pool(executor: ProcessPoolExecutor, timeout: float) -> None:
    """Shut a process pool down: queued tasks dropped, running ones given ``timeout`` seconds,
    then their processes killed (a long synthesis never holds a daemon's stop)."""
    processes = list((getattr(executor, "_processes", None) or {}).values())  # no public handle before 3.14
    executor.shutdown(wait=False, cancel_futures=True)
    deadline = time.monotonic() + timeout
    for proc in processes:
        proc.join(max(0.0, deadline - time.monotonic()))
    for proc in processes:
        if proc.is_alive():
            proc.kill()
            proc.join(1.0)


class ChildFailed(CuzkError):
    """The one-off process raised (its type and message) or died."""


def _child(fn: Callable[[], object], conn, parent_pid: int) -> None:
    die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        fn()
    except BaseException as exc:
        conn.send(f"{type(exc).__name__}: {exc}")
    else:
        conn.send("")
    finally:
        conn.close()


async def run_killable(fn: Callable[[], object], what: str, kill_wait: float = 1.0) -> None:
    """Run picklable ``fn()`` in a new process and wait for it without a thread; a cancelled
    wait terminates the process (SIGTERM, then SIGKILL after ``kill_wait`` s). Raises
    ChildFailed with the child's error."""
    ctx = multiprocessing.get_context("spawn")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(fn, send, os.getpid()), name=what, daemon=True)
    proc.start()
    send.close()
    loop = asyncio.get_running_loop()
    ended = loop.create_future()
    def child_ended() -> None:
        if not ended.done():
            ended.set_result(None)

    loop.add_reader(proc.sentinel, child_ended)
    try:
        await ended
    except asyncio.CancelledError:
        proc.terminate()
        await loop.run_in_executor(None, proc.join, kill_wait)
        if proc.is_alive():
            proc.kill()
            await loop.run_in_executor(None, proc.join, kill_wait)
        log.info("%s: cancelled, process %d stopped", what, proc.pid)
        raise
    finally:
        loop.remove_reader(proc.sentinel)
        proc.join(0)
    error = recv.recv() if recv.poll() else f"process died (exit code {proc.exitcode})"
    recv.close()
    if error:
        raise ChildFailed(f"{what}: {error}")
