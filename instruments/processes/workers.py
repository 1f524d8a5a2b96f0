"""Forked worker processes for a render: one task queue, one result queue, a clean end.

``instruments.mix.voice_processes`` (the notes) and ``instruments.mix.processes`` (the mix) both
fork children that take tasks from a queue and send results back.  ``Workers`` holds what they
share: the children ignore SIGINT (the render's own interrupt handling stays in the parent) and
die with the parent (``instruments.processes.parent_death``); a child's error comes back as a
message and is raised in the parent as a ``UserError``; a child that dies without a word is one
too; every way out of the parent stops and reaps them.
"""

from __future__ import annotations

import mmap
import multiprocessing
import os
import queue
import signal
from collections.abc import Callable
from typing import Any

from cues.errors import UserError
from instruments.processes.held_signals import held
from instruments.processes.parent_death import die_with_parent

_POLL_S = 0.5  # how often a wait for a result checks that the children still live
_MADV_POPULATE_WRITE = 23  # Linux ≥ 5.14: map (and allocate) a range's pages in one call


def possible() -> bool:
    """Whether forked workers may be used here: ``fork`` exists and
    ``YUEZHENG_MIX_PROCESSES=0`` does not ask for one process."""
    return ("fork" in multiprocessing.get_all_start_methods()
            and os.environ.get("YUEZHENG_MIX_PROCESSES", "") != "0")


def populate(shared: mmap.mmap, start: int, length: int) -> None:
    """Map the pages of ``shared[start:start + length]`` for writing in one call, before a
    child writes there (page by page, the faults cost a 33-minute render ~0.2 CPU-s); a
    kernel without ``MADV_POPULATE_WRITE`` leaves them to be faulted in."""
    first = start - start % mmap.PAGESIZE
    end = min(len(shared), start + length)
    if end <= first:
        return
    try:
        shared.madvise(_MADV_POPULATE_WRITE, first, end - first)
    except (OSError, ValueError, AttributeError):
        pass


def _serve(what: str, work: Callable[[Any], Any], tasks: multiprocessing.SimpleQueue,
           done: multiprocessing.Queue) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for ending in (signal.SIGTERM, signal.SIGHUP):  # not the parent's handlers (held_signals')
        signal.signal(ending, signal.SIG_DFL)
    die_with_parent(signal.SIGKILL)
    while (task := tasks.get()) is not None:
        try:
            done.put((work(task), None))
        except UserError as exc:
            done.put((None, str(exc)))
        except BaseException as exc:  # handed to the parent, which raises it
            done.put((None, f"{what} process: {type(exc).__name__}: {exc}"))


class Workers:
    """``count`` forked children, each running ``work(task)`` for the tasks ``put`` to them
    (``work`` and what it reads are the fork's copy: nothing is pickled but tasks and
    results); named ``yuezheng-NAME-i``; ``what`` names them in messages."""

    def __init__(self, what: str, name: str, work: Callable[[Any], Any], count: int) -> None:
        ctx = multiprocessing.get_context("fork")
        self.what = what
        self.tasks: multiprocessing.SimpleQueue = ctx.SimpleQueue()
        self.done: multiprocessing.Queue = ctx.Queue()
        self.children = [ctx.Process(target=_serve, name=f"yuezheng-{name}-{i}", daemon=True,
                                     args=(what, work, self.tasks, self.done))
                         for i in range(count)]

    def start(self) -> None:
        """Fork the children, Ctrl-C and the ending signals held meanwhile (``held_signals``:
        one that came during a fork is acted on after it, not lost in Python's fork hooks)."""
        with held():
            for child in self.children:
                child.start()

    def put(self, task: Any) -> None:
        self.tasks.put(task)

    def result(self) -> Any:
        """The next result a child sent; a child's error is raised here, and a child that
        died without a word (or all of them gone with results still awaited) is one."""
        while True:
            try:
                result, error = self.done.get(timeout=_POLL_S)
            except queue.Empty:
                dead = [c for c in self.children if not c.is_alive()]
                failed = [c for c in dead if c.exitcode != 0]
                if failed or len(dead) == len(self.children):
                    code = (failed or dead)[0].exitcode
                    raise UserError(f"a {self.what} process ended unexpectedly (exit code "
                                    f"{code}): the render was not written") from None
                continue
            if error is not None:
                raise UserError(error)
            return result

    def stop(self, whole: bool) -> None:
        """End the children: after ``whole`` work each is told to stop after its tasks;
        otherwise (an error, Ctrl-C, an early close: what they do is not wanted) they are
        killed at once, with no word through the task queue — a Ctrl-C that came just after
        a ``put`` took the queue's lock can leave it taken (Python's ``with`` around a
        ``multiprocessing`` lock: the interrupt lands between the taking and the block), and
        another ``put`` would wait for it for ever.  Any still alive after 2 s is killed; all
        are reaped."""
        try:
            if whole:
                for _ in self.children:
                    self.tasks.put(None)
        finally:
            for child in self.children:
                if child.pid is None:  # never started
                    continue
                if not whole and child.is_alive():
                    child.kill()
                child.join(timeout=2.0)
                if child.is_alive():
                    child.kill()
                    child.join()
            self.done.close()
            self.done.join_thread()
