"""Summarise many files (or one big one) on every core: worker processes, bounded memory.

Each worker streams its file in fixed-size chunks and sends back only a summary (or, for a range
of a big file, the collector's aggregates), so memory per process stays at a few chunks however
many files there are. The rule book and matcher are built once in the parent and inherited by
forked workers; where fork is not available the workers load the same rule folders themselves.
"""

from __future__ import annotations

import contextlib
import os
import pickle
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from denpex.errors import DenpexError
from denpex.logs.attribution import Attribution
from denpex.logs.diagnose import matcher_for
from denpex.logs.layout import LogSource
from denpex.logs.summary import FileCollector, scan_range, summarise
from denpex.rulebook import RuleBook, load_rulebook

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

    from denpex.logs.diagnose import Diagnosis

BIG_FILE = 96 << 20  # a file this big is cut into ranges, one per worker
SMALL_JOB = 24 << 20  # below this many bytes in all, one process is faster than starting workers

_BOOK: RuleBook | None = None
_RULE_DIRS: list[str] = []
_CONTEXT = 100


def init_worker(rule_dirs: list[str], context: int) -> None:
    global _BOOK, _RULE_DIRS, _CONTEXT
    if _BOOK is None or rule_dirs != _RULE_DIRS:
        _BOOK = load_rulebook(rule_dirs) if rule_dirs else None
        _RULE_DIRS = rule_dirs
    _CONTEXT = context
    matcher_for(_BOOK)


def _summary_work(src: LogSource) -> dict[str, Any]:
    try:
        return summarise(src, _BOOK, _CONTEXT)[0]
    except DenpexError as exc:
        return {"error": str(exc), "source": src.to_json()}


def _range_work(path: str, start: int, end: int, base: Attribution | None) -> FileCollector:
    c = scan_range(path, start, end, _BOOK, _CONTEXT, base)
    # contexts are keyed by id(Finding), which means nothing in another process: key them by finding
    c.contexts = {k: c.contexts[id(f)] for k, f in c.findings.items() if id(f) in c.contexts}  # type: ignore[misc]
    c.matcher = None  # type: ignore[assignment]  # not picklable; the parent puts its own back
    c.book = None  # type: ignore[assignment]
    return c


def _restored(c: FileCollector, book: RuleBook | None) -> FileCollector:
    """A collector back from _range_work in another process, keyed and equipped as in this one."""
    matcher = matcher_for(book)
    c.contexts = {id(c.findings[k]): v for k, v in c.contexts.items()}  # type: ignore[index]
    c.matcher, c.book = matcher, matcher.book
    return c


class ForkPool:
    """What summarise() needs of a pool, for the ranges of one big file: a forked child per range.

    No executor: importing multiprocessing and concurrent.futures and starting the pool delayed the
    scan of a 1 GiB log by 11 ms (of 0.41 s), about a third of its margin over ripgrep. The child
    inherits the rule book and matcher, scans its range and writes its collector back through a pipe.
    call() runs another function of the workers the same way (the first-error pass's ranges).
    """

    def __init__(self, book: RuleBook | None) -> None:
        self.book = book

    def submit(self, _fn: Callable[..., FileCollector], path: str, start: int, end: int,
               _book: Any, _context: int, base: Attribution | None) -> _ForkResult:
        return self._fork(_range_work, (path, start, end, base), path, restore=True)

    def call(self, fn: Callable[..., Any], *args: Any) -> _ForkResult:
        """fn(*args) in a forked child: its (pickled) result from result(), or cancel() to stop it."""
        return self._fork(fn, args, str(args[0]) if args else fn.__name__, restore=False)

    def first_error_range(self, *args: Any) -> _ForkResult:
        """The first-error pass over one range (first_error_range_work's arguments), in a forked child."""
        return self.call(first_error_range_work, *args)

    def _fork(self, fn: Callable[..., Any], args: tuple[Any, ...], what: str, restore: bool) -> _ForkResult:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns into the parent's code, never flushes its buffers
            status = 0
            try:
                os.close(r)
                try:
                    payload = pickle.dumps(("ok", fn(*args)))
                except DenpexError as exc:
                    payload = pickle.dumps(("error", str(exc)))
                except BaseException as exc:  # reported by the parent as one line
                    payload = pickle.dumps(("error", f"{what}: range scan failed: {type(exc).__name__}: {exc}"))
                with os.fdopen(w, "wb") as fh:
                    fh.write(payload)
            except BaseException:  # the parent sees no result and says so
                status = 1
            finally:
                os._exit(status)
        os.close(w)
        return _ForkResult(pid, r, self.book, restore)


class _ForkResult:
    def __init__(self, pid: int, fd: int, book: RuleBook | None, restore: bool = True) -> None:
        self.pid, self.fd, self.book, self.restore = pid, fd, book, restore
        self.done = False

    def result(self) -> Any:
        self.done = True
        with os.fdopen(self.fd, "rb") as fh:
            data = fh.read()
        os.waitpid(self.pid, 0)
        if not data:
            raise DenpexError("a worker process ended without its result (killed?)")
        kind, value = pickle.loads(data)
        if kind == "error":
            raise DenpexError(str(value))
        return _restored(value, self.book) if self.restore else value

    def cancel(self) -> None:
        """Stop the child (its result is not needed) and reap it."""
        if self.done:
            return
        import signal  # here: only a first-error pass that stops later ranges needs it (0.4 ms of a start)

        self.done = True
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        os.close(self.fd)
        os.waitpid(self.pid, 0)


class RangePool:
    """What summarise() needs of a pool: submit(scan_range, ...) run in a worker."""

    def __init__(self, ex: ProcessPoolExecutor, book: RuleBook | None) -> None:
        self.ex, self.book = ex, book

    def submit(self, _fn: Callable[..., FileCollector], path: str, start: int, end: int,
               _book: Any, _context: int, base: Attribution | None) -> Future[FileCollector]:
        from concurrent.futures import Future

        fut: Future[FileCollector] = Future()
        inner = self.ex.submit(_range_work, path, start, end, base)

        def done(f: Future[FileCollector]) -> None:
            exc = f.exception()
            if exc is not None:
                fut.set_exception(exc)
                return
            fut.set_result(_restored(f.result(), self.book))

        inner.add_done_callback(done)
        return fut

    def call(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        """fn(*args) in a worker (a function at the top of a module: it is pickled by name)."""
        return self.ex.submit(fn, *args)

    def first_error_range(self, *args: Any) -> Future[Any]:
        """The first-error pass over one range (first_error_range_work's arguments), in a worker."""
        return self.call(first_error_range_work, *args)


def summarise_big(src: LogSource, rule_dirs: list[str], context: int,
                  jobs: int, first_error: bool = False) -> tuple[dict[str, Any], Diagnosis]:
    """summarise() of one big file on its own, its ranges on `jobs` processes (after init_worker):
    forked children where fork exists (ForkPool), else an executor of spawned workers."""
    if hasattr(os, "fork"):
        return summarise(src, _BOOK, context, ranges=jobs, pool=ForkPool(_BOOK), first_error=first_error)
    with _executor(jobs - 1, rule_dirs, context) as ex:
        return summarise(src, _BOOK, context, ranges=jobs, pool=RangePool(ex, _BOOK), first_error=first_error)


def _executor(workers: int, rule_dirs: list[str], context: int) -> ProcessPoolExecutor:
    """Worker processes that start like this one (init_worker), forked where the platform can."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    return ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=init_worker,
                               initargs=(rule_dirs, context))


def current_book() -> RuleBook | None:
    return _BOOK


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def summarise_all(sources: list[LogSource], rule_dirs: list[str], context: int,
                  jobs: int | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """Summaries of all sources (in the order given) and warnings for files that could not be read."""
    init_worker(rule_dirs, context)
    jobs = default_jobs() if jobs is None else max(1, jobs)
    sizes = [_size(s) for s in sources]
    warnings: list[str] = []
    results: list[dict[str, Any] | None] = [None] * len(sources)
    if jobs == 1 or sum(sizes) < SMALL_JOB:
        for i, src in enumerate(sources):
            results[i] = _summary_work(src)
    elif len(sources) == 1 and sizes[0] >= BIG_FILE:
        try:
            results[0] = summarise_big(sources[0], rule_dirs, context, jobs)[0]
        except DenpexError as exc:
            results[0] = {"error": str(exc), "source": sources[0].to_json()}
    else:
        workers = jobs - 1 if any(sz >= BIG_FILE for sz in sizes) else jobs
        with _executor(max(1, workers), rule_dirs, context) as ex:
            small = [i for i in range(len(sources)) if sizes[i] < BIG_FILE]
            # batches of files per task: a thousand tiny tasks cost more in messages than in work
            chunk = max(1, min(32, len(small) // (4 * max(1, workers))))
            mapped = ex.map(_summary_work, [sources[i] for i in small], chunksize=chunk)
            for i, src in enumerate(sources):
                if sizes[i] >= BIG_FILE:  # this process scans the first range, workers the rest
                    try:
                        results[i] = summarise(src, _BOOK, context, ranges=jobs, pool=RangePool(ex, _BOOK))[0]
                    except DenpexError as exc:
                        results[i] = {"error": str(exc), "source": src.to_json()}
            for i, got in zip(small, mapped, strict=True):
                results[i] = got
    out: list[dict[str, Any]] = []
    for r in results:
        assert r is not None
        if "error" in r:
            warnings.append(f"not read: {r['error']}")
        else:
            out.append(r)
    return out, warnings


def first_error_range_work(path: str, prev: int, start: int, end: int, last: bool, base: Attribution | None,
                           context: int) -> Any:
    """The first-error pass over one range of a big file (first_error_ranges.scan_part), in a worker."""
    from denpex.logs.first_error_ranges import scan_part

    return scan_part(path, prev, start, end, last, matcher_for(_BOOK), base, context)


def _first_error_work(src: LogSource) -> dict[str, Any] | None:
    from denpex.logs.summary import first_error_of

    return first_error_of(src, _BOOK, _CONTEXT)


def first_errors_all(sources: list[LogSource], rule_dirs: list[str], context: int,
                     jobs: int | None = None) -> list[dict[str, Any] | None]:
    """Each source's first error line found by its shape (summary.first_error_of), in the order given,
    on every core when there is enough to read (a job whose files hold only collateral)."""
    init_worker(rule_dirs, context)
    jobs = default_jobs() if jobs is None else max(1, jobs)
    if jobs == 1 or sum(_size(s) for s in sources) < SMALL_JOB:
        return [_first_error_work(src) for src in sources]
    with _executor(jobs, rule_dirs, context) as ex:
        chunk = max(1, min(32, len(sources) // (4 * jobs)))
        return list(ex.map(_first_error_work, sources, chunksize=chunk))


def _size(src: LogSource) -> int:
    try:
        return os.path.getsize(src.path)
    except OSError:
        return 0
