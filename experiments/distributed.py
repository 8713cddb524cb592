"""Sweeps and tuning on many GPUs and hosts, through Dask distributed (an optional extra).

    python -m experiments.sweep NAME --gpus all            # one Dask worker per GPU of this machine
    python -m experiments.sweep NAME --gpus 0,2            # only those devices
    python -m experiments.sweep NAME --scheduler tcp://HOST:8786   # workers of a running Dask scheduler

The boundary between the sweep and the engine is small: :func:`measure_batch` runs a batch of rows on the
worker's one GPU and returns them as schema rows; :func:`worker_info` says which GPU a worker has;
:func:`compile_chunk` fills CuPy's on-disk kernel cache. Everything else here is the driver: it asks the
workers which GPUs they have, precompiles in parallel (one chunk of configs per worker, each with a pool of
compile processes; the cache is shared by the workers of a host), submits one Dask task per row (Dask's
scheduler hands them to the workers from one queue, in order), and writes every returned row itself: the
driver is the one writer of each results file. Another engine would implement the same driver loop around
the same three worker functions.

Failures. A worker that dies mid-row loses that row only: Dask reschedules it on another worker (after
``distributed.scheduler.allowed-failures`` deaths Dask gives up on the task, and the driver submits it
again, up to ``EngineOptions.resubmits`` times). A launch that kills a worker's CUDA context records that
row (``launch_error``) and restarts the worker's process. A driver killed mid-sweep loses nothing written:
run the same command again and it resumes from the file (rows with a final status are skipped). The driver
also never writes a (config, size) twice. Rows measured on different GPU models go to the file of the GPU
each ran on (``experiments/results/<gpu key>/<sweep>.jsonl``): with workers of several models, each model
measures the whole sweep, restricted to its own workers.
"""
from __future__ import annotations

import multiprocessing
import os
import secrets
import socket
import subprocess
import sys
import time
import uuid
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from experiments.sweep import (RunOptions, Size, Sweep, SweepError, Task, default_out, done_keys, make_row,
                               read_results, repair, RowWriter)

CLUSTER_REQUIREMENTS = "pip install -r requirements-cluster.txt"


class EngineError(SweepError):
    """The Dask engine cannot run: Dask missing, no workers, no GPU on a worker, a bad --gpus list."""


def dask_missing() -> str | None:
    """Why the Dask engine cannot be used here (None when ``dask.distributed`` imports)."""
    try:
        import distributed  # noqa: F401, PLC0415
    except ImportError as exc:
        return f"Dask distributed is not installed ({exc}); {CLUSTER_REQUIREMENTS}"
    return None


def parse_gpus(text: str) -> str | tuple[int, ...]:
    """``"all"`` or a comma-separated list of distinct device ids (``"0,1"``)."""
    text = text.strip().lower()
    if text == "all":
        return "all"
    try:
        ids = tuple(int(p) for p in text.split(","))
    except ValueError:
        raise EngineError(f"--gpus {text!r}: expected 'all' or device ids like 0,1") from None
    if not ids or any(i < 0 for i in ids) or len(set(ids)) != len(ids):
        raise EngineError(f"--gpus {text!r}: expected distinct device ids >= 0, like 0,1")
    return ids


# --------------------------------------------------------------------------------------------------
# Worker side: these run inside a Dask worker, on its one GPU
# --------------------------------------------------------------------------------------------------


def default_backend():
    """The real GPU (the worker's first visible device)."""
    from experiments.sweep import CupyBackend  # noqa: PLC0415
    return CupyBackend()


_STATE: dict[str, Any] = {}          # per worker process: the backend, its identity, cached problems


def _normal_bus_id(bus: str | None) -> str | None:
    """``00000000:18:00.0`` (nvidia-smi) and ``0000:18:00.0`` (CUDA) -> ``0:18:00.0``."""
    if not bus:
        return None
    parts = bus.strip().lower().split(":")
    if len(parts) == 3:
        try:
            parts[0] = f"{int(parts[0], 16):x}"
        except ValueError:
            pass
    return ":".join(parts)


def cuda_identity(pci_bus_id: str | None) -> dict[str, Any]:
    """nvidia-smi's index and UUID of the GPU at ``pci_bus_id`` (None where nvidia-smi cannot say)."""
    ident: dict[str, Any] = {"device_index": None, "uuid": None, "pci_bus_id": pci_bus_id}
    try:
        p = subprocess.run(["nvidia-smi", "--query-gpu=index,uuid,pci.bus_id", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ident
    want = _normal_bus_id(pci_bus_id)
    for line in p.stdout.splitlines():
        parts = [s.strip() for s in line.split(",")]
        if len(parts) == 3 and want and _normal_bus_id(parts[2]) == want:
            ident.update(device_index=int(parts[0]), uuid=parts[1])
    return ident


def _backend(factory: Callable[[], Any]):
    if "backend" not in _STATE or _STATE.get("factory") != factory:
        _STATE.clear()
        backend = factory()
        backend.preflight()
        ident_fn = getattr(backend, "device_identity", None)
        ident = ident_fn() if ident_fn else cuda_identity(getattr(getattr(backend, "info", None), "pci_bus_id", None))
        ident["cuda_visible_devices"] = os.environ.get("CUDA_VISIBLE_DEVICES")
        _STATE.update(factory=factory, backend=backend, identity=ident, problems=OrderedDict())
    return _STATE["backend"]


def _worker_address() -> str | None:
    try:
        from distributed import get_worker  # noqa: PLC0415
        return get_worker().address
    except Exception:  # noqa: BLE001 - outside a worker (tests call these directly)
        return None


def worker_info(factory: Callable[[], Any]) -> dict[str, Any]:
    """Which GPU this worker measures on: spec key and name, the spec itself, the device's identity."""
    backend = _backend(factory)
    return {"key": backend.spec.key, "name": backend.spec.name, "spec": backend.spec,
            "identity": dict(_STATE["identity"]), "host": socket.gethostname(), "pid": os.getpid(),
            "cpus": os.cpu_count() or 1}


def compile_chunk(factory: Callable[[], Any], cfgs: Sequence, procs: int) -> dict[str, Any]:
    """Compile ``cfgs`` for this worker's GPU into CuPy's on-disk cache, with ``procs`` compile processes
    (1 in a daemonic worker process, which may not start children: start workers with
    ``DASK_DISTRIBUTED__WORKER__DAEMON=False``)."""
    backend = _backend(factory)
    daemonic = multiprocessing.current_process().daemon
    t0 = time.monotonic()
    notes: list[str] = []
    errors = backend.precompile(list(cfgs), 1 if daemonic else procs, notes.append)
    return {"errors": errors, "seconds": time.monotonic() - t0, "procs": 1 if daemonic else procs,
            "daemonic": daemonic, "notes": notes[-3:]}


RESOURCE_PREFIX = "gemmscope-gpu-"

try:
    from distributed.diagnostics.plugin import WorkerPlugin as _WorkerPlugin
except ImportError:       # Dask is optional: the class is only used when it is there
    _WorkerPlugin = object


class GpuTag(_WorkerPlugin):
    """A worker plugin: each worker (also one restarted or joining later) declares the Dask resource
    ``gemmscope-gpu-<spec key>`` of its GPU, so rows of one GPU model can be held to its workers."""

    name = "gemmscope-gpu-tag"

    def __init__(self, factory: Callable[[], Any]) -> None:
        self.factory = factory

    async def setup(self, worker) -> None:
        import asyncio  # noqa: PLC0415
        try:
            info = await asyncio.get_running_loop().run_in_executor(None, worker_info, self.factory)
        except Exception:  # noqa: BLE001 - a worker without a usable GPU: discover() reports it
            return
        mine = RESOURCE_PREFIX + info["key"]
        res = {r: 0 for r in worker.state.total_resources if r.startswith(RESOURCE_PREFIX) and r != mine}
        res[mine] = 1
        await worker.set_resources(**res)


@dataclass(frozen=True)
class RunContext:
    """What every batch of one run shares: provenance and how to measure."""

    sweep: str
    run_id: str
    measure: Mapping[str, Any]
    factory: Callable[[], Any] = default_backend
    keep_problems: int = 2          # problems (inputs + float64 reference + cuBLAS) cached per worker


@dataclass
class BatchResult:
    rows: list[dict]
    worker: str | None
    identity: Mapping[str, Any]
    lost: bool = False              # the CUDA context died: the worker must be restarted
    measurements: list = field(default_factory=list)   # (Measurement, cuBLAS Measurement) per row


def _problem(backend, size: Size, seed: int, ctx: RunContext):
    """The inputs, reference and cuBLAS measurement of (size, seed), made once per worker."""
    problems: OrderedDict = _STATE["problems"]
    key = (size, seed, tuple(sorted(ctx.measure.items())))
    if key in problems:
        problems.move_to_end(key)
        return problems[key]
    while len(problems) >= max(1, ctx.keep_problems):
        _, (old, _, _) = problems.popitem(last=False)
        backend.free(old)
    problem = backend.problem(*size, seed)
    cublas = backend.cublas(problem, **ctx.measure)
    gpu = dict(backend.gpu_block())
    gpu.update({k: v for k, v in _STATE["identity"].items()})
    problems[key] = (problem, cublas, gpu)
    return problems[key]


def measure_batch(batch: Sequence[tuple[Task, int]], ctx: RunContext) -> BatchResult:
    """Measure each ``(task, seed)`` on this worker's GPU; return one schema row per task, in order.

    Each row's ``gpu`` block names the device that measured it (``device_index``, ``uuid``,
    ``pci_bus_id``, ``cuda_visible_devices``). On a lost CUDA context the batch stops: the rows so far and
    the ``launch_error`` row of the config that did it come back with ``lost=True``."""
    from gpu.errors import DeviceLost  # noqa: PLC0415

    backend = _backend(ctx.factory)
    rows: list[dict] = []
    ms: list = []
    for task, seed in batch:
        problem, cublas, gpu = _problem(backend, task.size, seed, ctx)
        try:
            m = cublas if task.config.rung == 0 else backend.run(task.config, problem, **ctx.measure)
        except DeviceLost as exc:
            if exc.measurement is not None:
                rows.append(make_row(exc.measurement, sweep=ctx.sweep, run_id=ctx.run_id, gpu=gpu, cublas=cublas))
                ms.append((exc.measurement, cublas))
            _STATE.clear()
            return BatchResult(rows, _worker_address(), gpu, lost=True, measurements=ms)
        rows.append(make_row(m, sweep=ctx.sweep, run_id=ctx.run_id, gpu=gpu, cublas=cublas))
        ms.append((m, cublas))
    return BatchResult(rows, _worker_address(), dict(_STATE["identity"]), measurements=ms)


# --------------------------------------------------------------------------------------------------
# Driver side
# --------------------------------------------------------------------------------------------------


@dataclass
class EngineOptions:
    """Where and how to run: local GPUs (``gpus``), a running scheduler (``scheduler``) or a ``client``."""

    gpus: str | Sequence[int] | None = None     # "all" or device ids: a local cluster, one worker per GPU
    scheduler: str | None = None                # address of a running Dask scheduler
    client: Any = None                          # an existing distributed.Client (tests, notebooks)
    backend: Callable[[], Any] = default_backend  # builds a worker's backend (picklable)
    gpu_key: str | None = None                  # measure only on workers with this GPU
    min_workers: int = 1                        # wait for this many workers before starting
    wait_s: float = 120.0                       # how long to wait for them
    connect_s: float = 30.0                     # how long to try to reach the scheduler
    batch_rows: int = 1                         # rows per Dask task (1: a dead worker loses one row at most)
    resubmits: int = 3                          # new submissions of a row whose task Dask gave up on
    precompile: bool = True
    run: RunOptions = field(default_factory=RunOptions)   # reps, warm-up, L2 policy, seed, limits
    sweep: str = "tune"                         # the ``sweep`` name rows carry (measure_tasks)


def gpu_ids(gpus: str | Sequence[int]) -> list[int]:
    """Device ids to start workers on: ``"all"`` reads CUDA_VISIBLE_DEVICES or nvidia-smi."""
    if gpus != "all":
        return list(gpus)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip():
        parts = [p.strip() for p in visible.split(",") if p.strip()]
        if all(p.isdigit() for p in parts):
            return [int(p) for p in parts]
        return list(range(len(parts)))      # UUIDs: workers get them by position
    try:
        p = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"], capture_output=True,
                           text=True, timeout=30)
        ids = [int(s) for s in p.stdout.split()]
    except (OSError, subprocess.SubprocessError, ValueError):
        ids = []
    if not ids:
        from gpu.errors import GPUUnavailable  # noqa: PLC0415
        raise GPUUnavailable("--gpus all: nvidia-smi lists no GPU on this machine")
    return ids


def local_gpu_cluster(ids: Sequence[int], log: Callable[[str], None]):
    """One worker process per GPU of this host, each seeing only its device first (CUDA_VISIBLE_DEVICES),
    one thread each; dask_cuda.LocalCUDACluster when it imports, else the same layout with plain Dask."""
    import dask  # noqa: PLC0415
    dask.config.set({"distributed.worker.daemon": False,      # workers may start compile processes
                     "distributed.scheduler.worker-ttl": None})
    common = dict(threads_per_worker=1, dashboard_address=None, silence_logs=40)
    try:
        from dask_cuda import LocalCUDACluster  # noqa: PLC0415
        return LocalCUDACluster(CUDA_VISIBLE_DEVICES=list(ids), n_workers=len(ids), **common)
    except Exception as exc:  # noqa: BLE001 - not installed, or not usable with this CUDA stack
        log(f"note: dask_cuda unusable ({type(exc).__name__}: {exc}); starting one plain Dask worker per GPU "
            "instead (the same layout)")
    from distributed import Nanny, Scheduler, SpecCluster  # noqa: PLC0415
    workers = {}
    for i, dev in enumerate(ids):
        order = [dev] + [d for d in ids if d != dev]
        workers[f"gpu{dev}"] = {"cls": Nanny, "options": {
            "nthreads": 1, "env": {"CUDA_VISIBLE_DEVICES": ",".join(map(str, order))}, "silence_logs": 40}}
    return SpecCluster(workers=workers, scheduler={"cls": Scheduler, "options": {"dashboard_address": None}},
                       silence_logs=40)


@contextmanager
def open_client(engine: EngineOptions, log: Callable[[str], None]) -> Iterator[Any]:
    """A client to the engine's workers (started here for ``gpus``, closed on exit)."""
    why = dask_missing()
    if why:
        raise EngineError(why)
    from distributed import Client  # noqa: PLC0415
    if engine.client is not None:
        yield engine.client
        return
    if engine.scheduler:
        try:
            client = Client(engine.scheduler, timeout=engine.connect_s)
        except (OSError, TimeoutError) as exc:
            raise EngineError(f"--scheduler {engine.scheduler}: cannot connect ({exc})") from None
        with client:
            yield client
        return
    if engine.gpus is None:
        raise EngineError("give --gpus or --scheduler")
    ids = gpu_ids(engine.gpus)
    log(f"starting {len(ids)} Dask workers, one per GPU {', '.join(map(str, ids))}")
    with local_gpu_cluster(ids, log) as cluster, Client(cluster) as client:
        yield client


@dataclass
class _Group:
    """Workers with one GPU model."""

    key: str
    spec: Any
    workers: dict[str, dict] = field(default_factory=dict)    # address -> worker_info
    restricted: bool = False      # other workers exist: hold the rows to this model's workers

    def resources(self) -> dict[str, int] | None:
        return {RESOURCE_PREFIX + self.key: 1} if self.restricted else None


def discover(client, engine: EngineOptions, log: Callable[[str], None]) -> dict[str, _Group]:
    """Ask every worker which GPU it has; group the workers by GPU model (spec key)."""
    from gpu.errors import GPUUnavailable  # noqa: PLC0415
    try:
        client.wait_for_workers(engine.min_workers, timeout=engine.wait_s)
    except TimeoutError:
        have = len(client.scheduler_info()["workers"])
        raise EngineError(f"waited {engine.wait_s:.0f} s for {engine.min_workers} Dask workers, "
                          f"{have} came") from None
    for attempt in range(5):       # a worker being restarted can drop the registration: try again
        try:
            client.register_plugin(GpuTag(engine.backend), name=GpuTag.name)
            break
        except (OSError, TimeoutError) as exc:
            if attempt == 4:
                raise EngineError(f"could not register the GPU tag plugin with the workers: {exc}") from None
            time.sleep(2)
    infos = client.run(worker_info, engine.backend, on_error="return")
    groups: dict[str, _Group] = {}
    failed = []
    excluded = False
    for addr, info in sorted(infos.items()):
        if isinstance(info, BaseException):
            failed.append(f"{addr}: {type(info).__name__}: {info}")
            continue
        info["host_ip"] = addr.split("://")[-1].rsplit(":", 1)[0]
        if engine.gpu_key and info["key"] != engine.gpu_key:
            log(f"note: worker {addr} has {info['name']} ({info['key']}), not --gpu {engine.gpu_key}: not used")
            excluded = True
            continue
        g = groups.setdefault(info["key"], _Group(info["key"], info["spec"]))
        g.workers[addr] = info
    for f in failed:
        log(f"worker without a usable GPU: {f}")
    if not groups:
        if failed and all("GPUUnavailable" in f or "needs a CUDA GPU" in f for f in failed):
            raise GPUUnavailable(f"no Dask worker has a usable GPU ({failed[0]})")
        raise EngineError("no Dask worker can measure" + (f": {failed[0]}" if failed else ""))
    for g in groups.values():
        g.restricted = len(groups) > 1 or excluded
        for addr, w in g.workers.items():
            ident = w["identity"]
            log(f"worker {addr} on {w['host']}: {w['name']} ({g.key}), device {ident.get('device_index')} "
                f"{ident.get('uuid') or ''} {ident.get('pci_bus_id') or ''}".rstrip())
    return groups


def _precompile(client, group: _Group, cfgs: list, engine: EngineOptions, log: Callable[[str], None]) -> None:
    """Split the configs over the group's workers; each compiles its chunk with a share of its host's cores."""
    from distributed import wait  # noqa: PLC0415
    if not cfgs:
        return
    t0 = time.monotonic()
    per_host: dict[str, int] = {}
    for w in group.workers.values():
        per_host[w["host_ip"]] = per_host.get(w["host_ip"], 0) + 1
    w0 = next(iter(group.workers.values()))
    procs = max(1, min(16, w0["cpus"] // per_host[w0["host_ip"]])) if engine.run.workers is None \
        else engine.run.workers
    n = len(group.workers)
    chunks = [cfgs[i::n] for i in range(n) if cfgs[i::n]]
    futs = [client.submit(compile_chunk, engine.backend, c, procs, resources=group.resources(),
                          pure=False, priority=10) for c in chunks]
    wait(futs)
    failed = 0
    notes = set()
    for f in futs:
        if f.status == "finished":
            r = f.result()
            failed += len(r["errors"])
            if r["daemonic"]:
                notes.add("workers are daemonic processes, so each compiled alone: start them with "
                          "DASK_DISTRIBUTED__WORKER__DAEMON=False for parallel compiles")
        else:
            notes.add(f"a compile chunk failed ({f.exception()!r}); its configs compile when measured")
    for note in sorted(notes):
        log(f"note: {note}")
    log(f"precompiled {len(cfgs)} configs for {group.key} in {time.monotonic() - t0:.1f} s on {len(chunks)} "
        f"workers x {procs} processes ({failed} failed or invalid)")


class _Runner:
    """Submits one Dask task per batch of rows and hands every returned row to ``sink`` once."""

    def __init__(self, client, engine: EngineOptions, ctx: RunContext, groups: dict[str, _Group],
                 sink: Callable[..., bool], log: Callable[[str], None]) -> None:
        self.client, self.engine, self.ctx, self.groups = client, engine, ctx, groups
        self.sink, self.log = sink, log
        self.meta: dict[Any, tuple[str, list[tuple[Task, int]], int]] = {}
        self.resubmitted = 0
        self.given_up: list[Task] = []

    def submit(self, key: str, batch: list[tuple[Task, int]], attempt: int = 0):
        fut = self.client.submit(measure_batch, batch, self.ctx, pure=False,
                                 resources=self.groups[key].resources(),
                                 key=f"gemmscope-row-{uuid.uuid4().hex}")
        self.meta[fut] = (key, batch, attempt)
        return fut

    def run(self, plan: Mapping[str, list[tuple[Task, int]]], deadline: float | None) -> int:
        """Measure every planned row; returns the number of rows left unmeasured (time limit, give-ups)."""
        from distributed import as_completed  # noqa: PLC0415
        from distributed.client import FutureCancelledError  # noqa: PLC0415

        futs = []
        for key, items in plan.items():
            b = max(1, self.engine.batch_rows)
            i = 0
            while i < len(items):      # batches never span two sizes
                j = i + 1
                while j < len(items) and j - i < b and items[j][0].size == items[i][0].size:
                    j += 1
                futs.append(self.submit(key, items[i:j]))
                i = j
        left = 0
        ac = as_completed(futs, with_results=True, raise_errors=False)   # results gathered in the background
        for fut, res in ac:
            if fut not in self.meta:
                continue
            key, batch, attempt = self.meta.pop(fut)
            if deadline is not None and time.monotonic() > deadline:
                left += len(batch) + sum(len(b) for _, b, _ in self.meta.values())
                fut.release()
                self._cancel()
                break
            if isinstance(res, tuple) and len(res) == 3 and isinstance(res[1], BaseException):
                res = res[1]                        # an error: (type, exception, traceback)
            try:
                if isinstance(res, BaseException):
                    raise res
                if not isinstance(res, BatchResult):
                    raise FutureCancelledError(fut.key, f"unexpected result {type(res).__name__}")
            except Exception as exc:  # noqa: BLE001 - sorted below
                from distributed import KilledWorker  # noqa: PLC0415
                if isinstance(exc, (KilledWorker, FutureCancelledError, OSError)) or "CommClosed" in type(exc).__name__:
                    if attempt < self.engine.resubmits:
                        self.resubmitted += 1
                        self.log(f"{len(batch)} row(s) lost with their worker ({type(exc).__name__}): submitted again")
                        ac.add(self.submit(key, batch, attempt + 1))
                    else:
                        self.given_up.extend(t for t, _ in batch)
                        left += len(batch)
                    continue
                self._cancel()
                t = batch[0][0]
                raise EngineError(f"a worker failed measuring {t.config.label} at {t.M}x{t.N}x{t.K}: "
                                  f"{type(exc).__name__}: {exc}") from exc
            finally:
                fut.release()
            for i, row in enumerate(res.rows):
                self.sink(row, *(res.measurements[i] if i < len(res.measurements) else (None, None)))
            if len(res.rows) < len(batch):          # the context died part-way: the rest goes back in
                ac.add(self.submit(key, batch[len(res.rows):], attempt))
            if res.lost:
                self.log(f"worker {res.worker}: the CUDA context was lost; restarting the worker process")
                try:
                    self.client.restart_workers([res.worker], raise_for_error=False)
                except Exception as exc:  # noqa: BLE001
                    self.log(f"note: could not restart {res.worker}: {exc}")
        return left

    def _cancel(self) -> None:
        for f in list(self.meta):
            f.cancel()
        self.meta.clear()


def _row_key(row: Mapping) -> tuple[str, int, int, int]:
    return (row["config_key"], row["M"], row["N"], row["K"])


def _progress_line(n: int, total: int, row: Mapping) -> str:
    head = f"[{n}/{total}] {row['M']}x{row['N']}x{row['K']:<6} {row['label']:<34}"
    dev = row["gpu"].get("device_index")
    where = f" gpu {dev if dev is not None else '?'}@{row['gpu'].get('hostname', '?')}"
    if row["status"] != "ok":
        reason = (row.get("reason") or "").strip().splitlines()[0][:80] if row.get("reason") else ""
        return f"{head} {row['status']}: {reason}{where}"
    return f"{head} {row['flop_per_s'] / 1e9:9.0f} GFLOP/s{where}"


def run_distributed(sweep: Sweep, engine: EngineOptions, *, out: Path | None = None,
                    sizes: Sequence[Size] | None = None,
                    log: Callable[[str], None] = lambda s: print(s, file=sys.stderr, flush=True)) -> dict[str, int]:
    """:func:`experiments.sweep.run_sweep` on every worker of the engine: measure every pending
    (config, size) of ``sweep`` once per GPU model among the workers and append the rows to
    ``out`` (default ``experiments/results/<gpu key>/<sweep>.jsonl``); resumable like a one-GPU sweep.

    Returns counts per status, ``"skipped"`` (already in the file) and ``"pending"`` (left by a time limit
    or by workers that kept dying)."""
    opts = engine.run
    t0 = time.monotonic()
    counts: dict[str, int] = {}
    with open_client(engine, log) as client:
        groups = discover(client, engine, log)
        if out is not None and len(groups) > 1:
            raise EngineError(f"--out {out}: the workers have GPUs of {len(groups)} models "
                              f"({', '.join(groups)}); their rows go to one file per GPU, leave out --out")
        run_id = f"{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"
        base_seed = secrets.randbelow(2**31) if opts.seed is None else opts.seed
        plan: dict[str, list[tuple[Task, int]]] = {}
        writers: dict[str, RowWriter] = {}
        done: dict[str, set] = {}
        paths: dict[str, Path] = {}
        try:
            for key, g in groups.items():
                path = out if out is not None else default_out(sweep, key)
                tasks, dropped = sweep.tasks(g.spec, sizes)
                results = read_results(path)
                what = repair(results)      # mends a last line cut off mid-write (and locks the file)
                if what:
                    log(f"{path}: {what if isinstance(what, str) else 'cut off an incomplete last line'}")
                done[key] = done_keys(results, key)
                pending = [t for t in tasks if t.key not in done[key]]
                counts["skipped"] = counts.get("skipped", 0) + len(tasks) - len(pending)
                if opts.limit is not None:
                    pending = pending[:opts.limit]
                all_sizes = list(dict.fromkeys(t.size for t in tasks))
                plan[key] = [(t, base_seed + all_sizes.index(t.size)) for t in pending]
                paths[key] = path
                log(f"sweep {sweep.name} on {len(g.workers)} {g.spec.name} worker(s) ({key}): {len(tasks)} rows, "
                    f"{len(tasks) - len(pending)} already in {path}, {len(pending)} to run; "
                    f"{len(dropped)} configs dropped as invalid for {key}")
            total = sum(len(p) for p in plan.values())
            if not total:
                return counts
            if engine.precompile:
                for key, items in plan.items():
                    cfgs = list(dict.fromkeys(t.config for t, _ in items if t.config.rung != 0))
                    _precompile(client, groups[key], cfgs, engine, log)
            n = 0

            def sink(row: dict, m=None, cublas=None) -> bool:
                nonlocal n
                key = row["gpu"]["key"]
                if key not in writers:             # rows are filed under the GPU that measured them
                    paths.setdefault(key, default_out(sweep, key) if out is None else out)
                    if key not in done:
                        done[key] = done_keys(read_results(paths[key]), key)
                    writers[key] = RowWriter(paths[key])
                if _row_key(row) in done[key]:
                    counts["duplicates_dropped"] = counts.get("duplicates_dropped", 0) + 1
                    return False
                writers[key].write(row)
                done[key].add(_row_key(row))
                counts[row["status"]] = counts.get(row["status"], 0) + 1
                n += 1
                log(_progress_line(n, total, row))
                return True

            ctx = RunContext(sweep.name, run_id, opts.measure_opts(), engine.backend)
            deadline = None if opts.time_limit_s is None else t0 + opts.time_limit_s
            runner = _Runner(client, engine, ctx, groups, sink, log)
            left = runner.run(plan, deadline)
            if left:
                counts["pending"] = left
                why = "time limit reached" if runner.given_up == [] else "workers kept dying on some rows"
                log(f"{why}: {left} rows left; run again to resume")
            if runner.resubmitted:
                counts["resubmitted"] = runner.resubmitted
        finally:
            for w in writers.values():
                w.close()
            from experiments import sweep as _sw  # noqa: PLC0415
            for p in paths.values():
                if hasattr(_sw, "unlock_results"):
                    _sw.unlock_results(p)
    log(f"sweep {sweep.name}: rows written to {', '.join(str(p) for p in paths.values())} in "
        f"{time.monotonic() - t0:.1f} s: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return counts


def measure_tasks(tasks: Sequence[Task], engine_options: EngineOptions,
                  log: Callable[[str], None] = lambda s: print(s, file=sys.stderr, flush=True)) -> list[dict]:
    """Measure ``tasks`` on the engine's workers (all of one GPU model: set ``gpu_key`` when the cluster
    has several) and return one schema row per task, in the order of ``tasks``; nothing is written.

    Rows of one size share their inputs' seed (``engine_options.run.seed`` + the size's index) and each
    worker's cuBLAS measurement at that size, as in a sweep. For ``experiments.tune``."""
    tasks = list(dict.fromkeys(tasks))
    if not tasks:
        return []
    engine = engine_options
    opts = engine.run
    rows: dict[tuple, dict] = {}
    with open_client(engine, log) as client:
        groups = discover(client, engine, log)
        if len(groups) > 1:
            raise EngineError(f"the workers have GPUs of {len(groups)} models ({', '.join(groups)}): "
                              "choose one with gpu_key")
        key, group = next(iter(groups.items()))
        base_seed = secrets.randbelow(2**31) if opts.seed is None else opts.seed
        sizes = list(dict.fromkeys(t.size for t in tasks))
        ordered = sorted(tasks, key=lambda t: sizes.index(t.size))
        if engine.precompile:
            _precompile(client, group, list(dict.fromkeys(t.config for t in ordered if t.config.rung != 0)),
                        engine, log)
        run_id = f"{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"
        ctx = RunContext(engine.sweep, run_id, opts.measure_opts(), engine.backend)

        def sink(row: dict, m=None, cublas=None) -> bool:
            return rows.setdefault(_row_key(row), row) is row

        deadline = None if opts.time_limit_s is None else time.monotonic() + opts.time_limit_s
        _Runner(client, engine, ctx, groups, sink, log).run(
            {key: [(t, base_seed + sizes.index(t.size)) for t in ordered]}, deadline)
    return [rows[t.key] for t in tasks if t.key in rows]


class _WorkersBackend:
    """Stands for the workers' GPUs in :func:`experiments.tune.tune`: their spec, and the ``gpu`` block
    (with the device identity) of the row being recorded. Nothing runs here."""

    def __init__(self, spec) -> None:
        self.spec = spec
        self.current_gpu: dict | None = None
        self.per_row_gpu_block = True        # tune: ask for the block per row (rows come from several GPUs)

    def preflight(self) -> None:
        pass

    def gpu_block(self) -> dict:
        if self.current_gpu is None:
            raise EngineError("no row measured yet: the workers' gpu block is not known")
        return dict(self.current_gpu)

    def free(self, problem) -> None:
        pass


class DaskMeasure:
    """``experiments.tune``'s ``measure`` hook on Dask workers (one GPU model), with the workers opened once:

        with DaskMeasure(EngineOptions(gpus="all", run=opts)) as measure:
            tune(measure.backend, size, cfgs, out, budget=8, opts=opts, measure=measure)

    Called like :func:`experiments.tune.measure_tasks`: ``measure(tasks, backend, opts, problems=..., log=...,
    on_result=...)``; the tasks of one call run in parallel on the workers and ``on_result(task, measurement,
    cublas)`` is called as each comes back (``measure.backend.gpu_block()`` is then that row's GPU).
    Returns ``[(task, measurement, cublas)]`` in task order. Inputs: one seed per size (``problems.seed`` or
    ``opts.seed`` + the order in which sizes first appear), the same on every worker."""

    def __init__(self, engine: EngineOptions,
                 log: Callable[[str], None] = lambda s: print(s, file=sys.stderr, flush=True)) -> None:
        self.engine, self.log = engine, log
        self._cm = None
        self._sizes: dict[Size, int] = {}
        self.backend: _WorkersBackend | None = None

    def __enter__(self) -> "DaskMeasure":
        from dataclasses import replace  # noqa: PLC0415
        self._cm = open_client(self.engine, self.log)
        client = self._cm.__enter__()
        try:
            self.engine = replace(self.engine, client=client)
            self.groups = discover(client, self.engine, self.log)
            if len(self.groups) > 1:
                raise EngineError(f"the workers have GPUs of {len(self.groups)} models ({', '.join(self.groups)}): "
                                  "choose one with gpu_key (--gpu)")
            self.backend = _WorkersBackend(next(iter(self.groups.values())).spec)
        except BaseException:
            self._cm.__exit__(*sys.exc_info())
            raise
        self.run_id = f"{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"
        return self

    def __exit__(self, *exc) -> None:
        if self._cm is not None:
            self._cm.__exit__(*exc)

    def __call__(self, tasks: Sequence[Task], backend=None, opts: RunOptions | None = None, *, problems=None,
                 log: Callable[[str], None] | None = None, on_result=None) -> list[tuple]:
        if self.backend is None:
            raise EngineError("use DaskMeasure in a with block")
        opts = opts or self.engine.run
        seed = getattr(problems, "seed", None)
        seed = seed if seed is not None else (opts.seed if opts.seed is not None else 0)
        tasks = list(dict.fromkeys(tasks))
        for t in tasks:
            self._sizes.setdefault(t.size, len(self._sizes))
        key, group = next(iter(self.groups.items()))
        engine = self.engine
        if engine.precompile:
            _precompile(engine.client, group, list(dict.fromkeys(t.config for t in tasks if t.config.rung != 0)),
                        engine, log or self.log)
        got: dict[tuple, tuple] = {}
        by_key = {t.key: t for t in tasks}

        def sink(row: dict, m=None, cublas=None) -> bool:
            k = _row_key(row)
            if k in got or k not in by_key:
                return False
            got[k] = (by_key[k], m, cublas)
            if on_result is not None:
                self.backend.current_gpu = row["gpu"]
                on_result(by_key[k], m, cublas)
            return True

        ctx = RunContext("tune", self.run_id, opts.measure_opts(), engine.backend)
        _Runner(engine.client, engine, ctx, self.groups, sink, log or self.log).run(
            {key: [(t, seed + self._sizes[t.size]) for t in tasks]}, None)
        return [got[t.key] for t in tasks if t.key in got]
