"""Resident shards: training data kept where it is evaluated, only the parameters on the wire.

An iterative fit (L-BFGS over a sum of per-shard losses) evaluates the same data at every
iteration with new parameters. :class:`ResidentShards` holds that data as a list of shards and
evaluates a module-level function ``func(shard, params, *args)`` on each of them:

- **locally** (no dask): the shards stay in this process and are evaluated in a plain loop, or
  on threads when ``n_jobs`` asks for more than one job (the numba kernels release the GIL);
- **on a dask cluster**, when the joblib backend is ``"dask"`` (``with
  joblib.parallel_backend("dask"):``, which needs a :class:`distributed.Client`), or given a
  ``client``: each shard is scattered **once** to one worker (or made there by a loader,
  :meth:`ResidentShards.from_loaders`) and stays there for the whole fit; every evaluation runs one
  task per shard pinned to its worker, carrying only ``params``, and gathers the per-shard results.

Either way the results are summed in one fixed pairwise order over the shards
(:func:`tree_sum`), so the same shards give the same model locally and on a cluster.

``n_jobs`` sets the number of shards under every backend (:func:`n_shards`): a positive
``n_jobs`` is the shard count; ``None`` or a negative value count the jobs of the active
backend: this machine's cores locally, the cluster's worker threads under dask.

Faults: waiting for an evaluation polls the cluster; when a worker that holds a shard is gone,
its shards are scattered again from the driver's copy to a live worker and their tasks
resubmitted (at most ``max_recoveries`` times per fit), or, with ``max_recoveries=0``, a
:class:`ShardLostError` names the lost worker. An evaluation that takes longer than ``timeout``
seconds raises :class:`TimeoutError`. Options for the fits of the estimators (which create their
shards themselves) are set with :func:`shard_options`. dask is imported only when it is used.
"""

import contextlib
import contextvars
import itertools
import numbers
import time
import uuid

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs
from joblib.parallel import get_active_backend

from .validation import check_scalar_param

__all__ = ["ResidentShards", "ShardLostError", "dask_client", "n_shards", "shard_options", "tree_sum",
           "count_worker_bytes"]

_OPTIONS = contextvars.ContextVar("sklearn_struct_shard_options",
                                  default={"timeout": 600.0, "max_recoveries": 3, "poll": 0.5})


class ShardLostError(RuntimeError):
    """A dask worker holding a shard was lost and the shard could not be re-created."""


@contextlib.contextmanager
def shard_options(*, timeout=None, max_recoveries=None, poll=None):
    """Options of the resident shards created inside the ``with`` block (by any estimator's fit).

    Parameters
    ----------
    timeout : float, default=600
        Seconds one evaluation may take on the cluster before :class:`TimeoutError`.
    max_recoveries : int, default=3
        Lost workers recovered per fit by scattering their shards again; 0 raises
        :class:`ShardLostError` at the first loss.
    poll : float, default=0.5
        Seconds between checks that the workers holding shards are alive.

    Examples
    --------
    >>> with shard_options(timeout=30.0, max_recoveries=0):
    ...     _OPTIONS.get()["timeout"]
    30.0
    """
    new = dict(_OPTIONS.get())
    checks = {"timeout": dict(low=0.0, closed="neither", allow_inf=True), "max_recoveries": dict(kind="int", low=0),
              "poll": dict(low=0.0, closed="neither")}
    for name, value in (("timeout", timeout), ("max_recoveries", max_recoveries), ("poll", poll)):
        if value is not None:
            new[name] = check_scalar_param(value, name, **checks[name])
    token = _OPTIONS.set(new)
    try:
        yield
    finally:
        _OPTIONS.reset(token)


def dask_client():
    """The dask client fits should use, or None to run locally: the client of joblib's active
    ``"dask"`` backend.

    A client that merely exists (the global default, or one opened by ``with Client() as c:``)
    does not move fits to the cluster: ``with joblib.parallel_backend("dask"):`` does, as for
    scikit-learn's own estimators. Code already running inside a dask task evaluates locally (a
    task that waited for other tasks could deadlock the worker threads).
    """
    backend, _ = get_active_backend()
    if not type(backend).__module__.startswith("joblib._dask"):
        return None
    import distributed

    try:
        distributed.get_worker()
        return None  # inside a task
    except ValueError:
        return backend.client


def n_shards(n_jobs, client=None):
    """Number of shards for ``n_jobs``: itself when positive, else the active backend's job count.

    Locally ``None`` means one shard (unless a ``parallel_config`` sets ``n_jobs``) and ``-1``
    one per core; on a dask cluster ``None`` and ``-1`` mean one per worker thread.

    >>> n_shards(3)
    3
    >>> n_shards(None)
    1
    """
    n_jobs = _check_n_jobs(n_jobs)
    client = dask_client() if client is None else _check_client(client)
    if client is None:
        return max(1, effective_n_jobs(n_jobs))
    if n_jobs is None:
        n_jobs = get_active_backend()[1]
        n_jobs = -1 if n_jobs is None else n_jobs
    if n_jobs > 0:
        return int(n_jobs)
    threads = sum(client.nthreads().values())
    return max(1, threads + 1 + n_jobs)


def _check_n_jobs(n_jobs):
    """``n_jobs`` as joblib takes it: None or a non-zero integer."""
    if n_jobs is None:
        return None
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral):
        raise TypeError(f"n_jobs must be None or a non-zero integer, got {n_jobs!r}.")
    if n_jobs == 0:
        raise ValueError("n_jobs must be None or a non-zero integer, got 0.")
    return int(n_jobs)


def _check_client(client, required=("nthreads",)):
    """``client`` must look like a :class:`distributed.Client` (or be None)."""
    if client is not None and not all(callable(getattr(client, m, None)) for m in required):
        raise TypeError(f"client must be a distributed.Client or None, got {type(client).__name__}.")
    return client


def _add(a, b):
    if isinstance(a, tuple):
        return tuple(_add(x, y) for x, y in zip(a, b))
    return a + b


def tree_sum(results):
    """Sum per-shard results (numbers, arrays or tuples of them) in a fixed pairwise order.

    >>> tree_sum([(1.0, np.ones(2)), (2.0, np.ones(2)), (3.0, np.zeros(2))])
    (6.0, array([2., 2.]))
    """
    if not isinstance(results, (list, tuple)):
        raise TypeError(f"results must be a list or tuple of per-shard results, got {type(results).__name__}.")
    results = list(results)
    if not results:
        raise ValueError("tree_sum needs at least one result: results is empty.")
    while len(results) > 1:
        pairs = [_add(results[i], results[i + 1]) for i in range(0, len(results) - 1, 2)]
        results = pairs + results[len(results) - len(results) % 2:]
    return results[0]


def _check_shards(shards, name):
    """A list of the shards (any iterable but a string or mapping)."""
    if isinstance(shards, (str, bytes, dict)) or not hasattr(shards, "__iter__"):
        raise TypeError(f"{name} must be a list of per-shard data, got {type(shards).__name__}.")
    shards = list(shards)
    if not shards:
        raise ValueError(f"{name} is empty: at least one shard is needed.")
    return shards


def _load(loader):
    """The task making a shard on its worker."""
    return loader()


def _run(func, shard, params, args):
    """The task run on a worker: the shard is the worker's resident copy."""
    return func(shard, params, *args)


class ResidentShards:
    """Shards evaluated where they live: in this process, or each on one dask worker.

    Parameters
    ----------
    shards : list
        Per-shard data (any picklable objects). ``func`` may keep state in a shard (e.g. warm
        starts): the resident copy is the one evaluated every time.
    n_jobs : int or None, default=None
        Local threads for the shards (joblib's convention); ignored on a cluster.
    client : distributed.Client or None, default=None
        The cluster to use; by default :func:`dask_client` (None: local). A single shard is
        always evaluated locally.

    Examples
    --------
    >>> def loss(shard, theta):
    ...     return float(np.sum((shard - theta) ** 2)), 2.0 * (theta - shard).sum(axis=0)
    >>> with ResidentShards([np.ones((2, 3)), np.zeros((1, 3))]) as shards:
    ...     shards.sum(loss, np.zeros(3))
    (6.0, array([-4., -4., -4.]))
    """

    def __init__(self, shards, *, n_jobs=None, client=None):
        self.shards = _check_shards(shards, "shards")
        self.n_jobs = _check_n_jobs(n_jobs)
        self.client = dask_client() if client is None else _check_client(client, ("nthreads", "submit", "scatter"))
        self._loaders = None
        if len(self.shards) <= 1:
            self.client = None
        self._options = dict(_OPTIONS.get())
        self._futures = None
        self._recoveries = 0
        self._name = f"sklearn-struct-shard-{uuid.uuid4().hex[:8]}"
        self._counter = itertools.count()

    @classmethod
    def from_loaders(cls, loaders, *, n_jobs=None, client=None):
        """Shards made by calling ``loader()`` where they will live: on a dask worker, so that the
        data never passes through this process (a lost shard is made again by its loader), or
        here when no cluster is active.

        Parameters
        ----------
        loaders : list of callable
            Module-level functions (or ``functools.partial`` of them) returning one shard each,
            e.g. reading and featurising one file of a corpus.
        n_jobs, client : as for the constructor.

        Examples
        --------
        >>> from functools import partial
        >>> shards = ResidentShards.from_loaders([partial(np.full, 2, 1.0), partial(np.full, 3, 2.0)])
        >>> shards.map(np.multiply, 2.0)
        [array([2., 2.]), array([4., 4., 4.])]
        """
        loaders = _check_shards(loaders, "loaders")
        for i, load in enumerate(loaders):
            if not callable(load):
                raise TypeError(f"loaders must be callables, got {type(load).__name__} at index {i}.")
        client = dask_client() if client is None else _check_client(client, ("nthreads", "submit", "scatter"))
        if client is None:
            return cls([load() for load in loaders], n_jobs=n_jobs, client=None)
        self = cls([None] * len(loaders), n_jobs=n_jobs, client=None)
        self.client, self._loaders = client, loaders  # on the cluster even for one shard: not through here
        return self

    def _place(self, i, worker):
        """Shard ``i`` onto ``worker``: scattered from the driver's copy, or made there by its loader."""
        if self._loaders is None:
            return self.client.scatter([self.shards[i]], workers=[worker], broadcast=False, hash=False)[0]
        return self.client.submit(_load, self._loaders[i], workers=[worker], allow_other_workers=False, pure=False,
                                  key=f"{self._name}-load-{i}-{uuid.uuid4().hex[:6]}")

    @property
    def distributed(self):
        """Whether the shards live on a dask cluster."""
        return self.client is not None

    @property
    def workers(self):
        """Address of the worker holding each shard (None locally, before the first evaluation)."""
        return None if self._futures is None else list(self._workers)

    # ------------------------------------------------------------------ evaluation
    def map(self, func, params, *args):
        """``[func(shard, params, *args) for shard in shards]``, evaluated where the shards live."""
        if not self.distributed:
            return self._map_local(func, params, args)
        return self._map_dask(func, params, args)

    def _map_each(self, func, per_shard, *args):
        """``[func(shard, per_shard[i], *args) for i, shard in enumerate(shards)]``: shard ``i``'s own
        parameters travel to its task only (e.g. a mapping of its vocabulary)."""
        if len(per_shard) != len(self.shards):
            raise ValueError(f"per_shard has {len(per_shard)} entries for {len(self.shards)} shards.")
        if not self.distributed:
            return [func(shard, p, *args) for shard, p in zip(self.shards, per_shard)]
        return self._map_dask(func, None, args, per_shard=list(per_shard))

    def sum(self, func, params, *args):
        """The per-shard results of :meth:`map` summed by :func:`tree_sum`."""
        return tree_sum(self.map(func, params, *args))

    def _map_local(self, func, params, args):
        if len(self.shards) <= 1 or effective_n_jobs(self.n_jobs) == 1:
            return [func(shard, params, *args) for shard in self.shards]
        # threads: the shards stay in this process (a process backend would copy them every time)
        return Parallel(n_jobs=self.n_jobs, backend="threading")(
            delayed(func)(shard, params, *args) for shard in self.shards)

    # ------------------------------------------------------------------ dask
    def _scatter(self):
        """Send every shard to one worker, in contiguous blocks over the workers' threads."""
        slots = self._slots()
        if not slots:
            raise ShardLostError(f"the dask cluster of {self.client} has no worker to hold the {len(self.shards)} "
                                 "shards.")
        self._workers = [slots[i * len(slots) // len(self.shards)] for i in range(len(self.shards))]
        self._futures = [self._place(i, w) for i, w in enumerate(self._workers)]

    def _slots(self, exclude=()):
        nthreads = {w: n for w, n in self.client.nthreads().items() if w not in exclude}
        if not nthreads:
            return []
        return [w for w in sorted(nthreads) for _ in range(max(1, nthreads[w]))]

    def _submit(self, func, params_futures, args, index, evaluation):
        w = self._workers[index]
        params = params_futures[index] if isinstance(params_futures, list) else params_futures[w]
        return self.client.submit(_run, func, self._futures[index], params, args, workers=[w],
                                  allow_other_workers=False, pure=False,
                                  key=f"{self._name}-{evaluation}-{index}-{uuid.uuid4().hex[:6]}")

    def _send_params(self, params):
        """``params`` for the task of each worker holding shards: {worker: params}.

        The parameters travel inside the tasks (once per shard; one shard per worker thread by
        default), not by ``scatter``: a scatter addressed to a worker killed a moment before could
        block the driver for minutes, where a task is rescheduled by dask's own bookkeeping.
        """
        return {w: params for w in set(self._workers)}

    def _map_dask(self, func, params, args, per_shard=None):
        import distributed

        if self._futures is None:
            self._scatter()
        evaluation, start = next(self._counter), time.monotonic()
        send = (lambda: self._send_params(params)) if per_shard is None else (lambda: per_shard)  # noqa: E731
        sent = self._retry(send, evaluation, start)
        tasks = [self._submit(func, sent, args, i, evaluation) for i in range(len(self.shards))]
        while not _finished(distributed, tasks, self._options["poll"]):
            lost = self._lost_shards(tasks)
            if lost:
                sent = self._retry(send, evaluation, start)  # moves the lost shards first
            # tasks dask cancelled (their shard's worker died) or that wait on a lost shard: again
            for i in sorted(set(lost) | {i for i, t in enumerate(tasks) if t.status in ("cancelled", "lost")}):
                tasks[i].cancel()
                tasks[i] = self._submit(func, sent, args, i, evaluation)
            self._check_time(start, evaluation, tasks)
        return self.client.gather(tasks)

    def _retry(self, action, evaluation, start):
        """``action()`` once every shard is on a live worker; a worker lost on the way (a closed
        connection) moves its shards and tries again."""
        while True:
            lost = self._lost_shards()
            if lost:
                self._move(lost, evaluation)
            try:
                return action()
            except (OSError, TimeoutError):  # CommClosedError, or no answer: a worker went away under us
                self._check_time(start, evaluation)
                time.sleep(self._options["poll"])

    def _check_time(self, start, evaluation, tasks=()):
        if time.monotonic() - start > self._options["timeout"]:
            busy = sorted({self._workers[i] for i, t in enumerate(tasks) if not t.done()})
            raise TimeoutError(f"evaluation {evaluation} of {len(self.shards)} resident shards did not finish "
                               f"within {self._options['timeout']} s (waiting on workers {busy}); raise the limit "
                               "with sklearn_struct.utils.shards.shard_options(timeout=...).")

    def _lost_shards(self, tasks=None):
        """Shards (with unfinished tasks, if given) whose worker left or whose resident copy is gone."""
        alive = set(self.client.nthreads())
        return [i for i, (w, f) in enumerate(zip(self._workers, self._futures))
                if (tasks is None or tasks[i].status not in ("finished", "error"))
                and (w not in alive or f.status in ("lost", "cancelled", "error"))]

    def _move(self, lost, evaluation):
        """Scatter the lost shards again from the driver's copies, to the live workers."""
        gone = sorted({self._workers[i] for i in lost})
        if self._recoveries >= self._options["max_recoveries"]:
            raise ShardLostError(f"dask worker(s) {gone} holding shard(s) {lost} were lost during evaluation "
                                 f"{evaluation}; {self._recoveries} recoveries already made (max_recoveries="
                                 f"{self._options['max_recoveries']}). The estimator is unchanged.")
        slots = self._slots(exclude=gone)
        if not slots:
            raise ShardLostError(f"dask worker(s) {gone} holding shard(s) {lost} were lost during evaluation "
                                 f"{evaluation} and no worker is left to hold them. The estimator is unchanged.")
        self._recoveries += 1
        for k, i in enumerate(lost):
            w = slots[k % len(slots)]
            self._futures[i].release()
            self._futures[i] = self._place(i, w)
            self._workers[i] = w

    def close(self):
        """Release the resident copies on the cluster (a later evaluation scatters them again)."""
        if self._futures is not None:
            for f in self._futures:
                f.release()
        self._futures = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _finished(distributed, tasks, poll):
    """True when every task has finished (or failed) within ``poll`` seconds."""
    try:
        distributed.wait(tasks, timeout=poll)
    except (TimeoutError, distributed.CancelledError):  # cancelled: a task whose worker died
        return False
    return all(t.status in ("finished", "error") for t in tasks)


# ---------------------------------------------------------------------------- measurement
def _install_counter(dask_worker=None, dask_scheduler=None):
    """Wrap this process's TCP deserialisation to count the bytes it receives (frames)."""
    import distributed.comm.tcp as tcp
    from distributed.utils import nbytes

    if not hasattr(tcp, "_sklearn_struct_bytes"):
        original = tcp.from_frames
        tcp._sklearn_struct_bytes = [0]

        async def counting(frames, *a, **k):
            tcp._sklearn_struct_bytes[0] += sum(nbytes(f) for f in frames)
            return await original(frames, *a, **k)

        tcp.from_frames = counting
    return tcp._sklearn_struct_bytes[0]


def count_worker_bytes(client):
    """A function returning the bytes every worker has received over TCP since this call.

    Counts everything a worker reads from the network (tasks, scattered data, transfers from
    other workers, heartbeats' replies), measured on the workers themselves by wrapping
    ``distributed.comm.tcp``'s frame decoding in each worker process (workers started later are
    not counted).

    Returns
    -------
    read : callable
        ``read()`` returns ``{worker address: bytes received since count_worker_bytes}``.
    """
    _check_client(client, ("run",))
    if client is None:
        raise TypeError("client must be a distributed.Client, got None.")
    base = client.run(_install_counter)

    def read():
        now = client.run(_install_counter)
        return {w: now[w] - base.get(w, 0) for w in now}

    return read
