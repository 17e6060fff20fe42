"""Waiting for a condition in the Python checks (tests/faults, the systemd scope check)."""
import time


def wait_until(predicate, timeout=30.0, interval=0.2):
    """True as soon as `predicate()` is; its last value once `timeout` seconds have passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()
