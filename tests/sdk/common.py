"""What every SDK check shares: where the server is, and a loud failure."""

import os
import sys

URL = os.environ["KVRUN_URL"]  # http://127.0.0.1:PORT
KEY = os.environ["KVRUN_KEY"]


def check(condition, what):
    if not condition:
        print(f"FAILED: {what}", file=sys.stderr)
        sys.exit(1)


def expect_error(error_type, call, needle=None):
    """The call must raise the SDK's own `error_type`, whose message holds `needle`."""
    name = getattr(error_type, "__name__", None) or " or ".join(t.__name__ for t in error_type)
    try:
        call()
    except error_type as e:
        if needle is not None:
            check(needle in str(e), f"{name} message {str(e)!r} lacks {needle!r}")
        return e
    except Exception as e:  # noqa: BLE001 - reported as the failure it is
        check(False, f"expected {name}, got {type(e).__name__}: {e}")
    check(False, f"expected {name}, got a reply")
