"""The model-connection limit really bounds concurrent model calls."""

import threading
import time

from evoround.throttle import ModelLimit, model_slot, set_model_connections, use_model_limit


def _peak(n_threads: int) -> int:
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

    threads = [threading.Thread(target=call) for _ in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return peak


def test_model_slot_bounds_calls_in_flight():
    try:
        set_model_connections(2)
        assert _peak(6) == 2
        set_model_connections(None)
        assert _peak(6) > 2
    finally:
        set_model_connections(None)


def test_an_installed_model_limit_is_the_one_calls_wait_for():
    """The job installs its own ``ModelLimit``; agents' and the judge's slots come from it."""
    limit = ModelLimit(3)
    try:
        use_model_limit(limit)
        assert _peak(6) == 3
    finally:
        set_model_connections(None)
    assert ModelLimit(None).n is None and _peak(6) > 2
