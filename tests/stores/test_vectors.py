"""The in-process search engines and their helpers, without a database."""

from __future__ import annotations


def test_a_keyword_index_makes_no_semaphore_that_a_worker_would_leave_behind() -> None:
    """bm25s draws a (hidden) tqdm bar, and tqdm's first bar made a multiprocessing lock:
    a named semaphore, which a ``serve --workers`` worker left behind at exit (the
    resource tracker warned of it at shutdown). Run in a fresh interpreter, where no
    other test has made tqdm's lock yet, started as a worker is (``spawn``: its locks
    are named semaphores)."""
    import subprocess
    import sys

    script = """
import multiprocessing
multiprocessing.set_start_method("spawn")
from multiprocessing import resource_tracker
made = []
resource_tracker.register = lambda name, rtype: made.append(rtype)
from convrag.stores.vectors import Bm25sKeywordIndex
index = Bm25sKeywordIndex()
index.build("ws", 1, [("c1", "d1", "Annual leave is 25 days."), ("c2", "d2", "Meals.")])
assert [h.document_id for h in index.search("ws", "annual leave", 1)] == ["d1"]
print(made)
"""
    ran = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "[]"
