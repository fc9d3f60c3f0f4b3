"""The model-connection limit really bounds concurrent model calls, per job."""

import threading
import time

from evoround.throttle import ModelLimit, in_this_context, model_limit, model_slot


def _peak(n_threads: int) -> int:
    """The most calls in flight when ``n_threads`` threads, started in the caller's context
    as the executor starts its workers, each make one call."""
    inside = 0
    peak = 0
    lock = threading.Lock()

    def call() -> None:
        nonlocal inside, peak
        with model_slot():
            with lock:
                inside += 1
                peak = max(peak, inside)
            time.sleep(0.05)
            with lock:
                inside -= 1

    threads = [threading.Thread(target=in_this_context(call)) for _ in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return peak


def test_model_slot_bounds_calls_in_flight():
    with model_limit(ModelLimit(2)):
        assert _peak(6) == 2
    assert _peak(6) > 2  # nothing is left set once the block ends


def test_outside_a_job_calls_are_unlimited():
    assert ModelLimit(None).n is None and _peak(6) > 2


def test_two_jobs_in_one_process_keep_their_own_limits():
    """Two ``api.run`` calls on two threads: each one's calls wait on its own limit only."""
    peaks: dict[str, int] = {}

    def job(name: str, n: int) -> None:
        with model_limit(ModelLimit(n)):
            peaks[name] = _peak(6)

    jobs = [
        threading.Thread(target=job, args=("a", 1)),
        threading.Thread(target=job, args=("b", 3)),
    ]
    for t in jobs:
        t.start()
    for t in jobs:
        t.join()
    assert peaks == {"a": 1, "b": 3}
