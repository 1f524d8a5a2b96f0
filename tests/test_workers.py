"""The render's forked workers (``instruments.processes.workers``): every task answered, every child
reaped, whatever the number of tasks."""

from __future__ import annotations

import os

from instruments.processes.workers import Workers


def test_more_tasks_than_a_pipe_holds_are_all_answered_and_the_children_reaped() -> None:
    count = 20_000  # ~16 bytes a task: five times what a 64 KiB pipe holds
    pool = Workers("test", "test", lambda i: (i, os.getpid()), 2)
    pool.start()
    try:
        for i in range(count):  # the children drain the queue while it is filled
            pool.put(i)
        answers = [pool.result() for _ in range(count)]
    finally:
        pool.stop(True)
    assert sorted(i for i, _ in answers) == list(range(count))
    pids = {pid for _, pid in answers}
    assert os.getpid() not in pids and len(pids) <= 2  # done by the children, not here
    assert all(not child.is_alive() and child.exitcode == 0 for child in pool.children)
