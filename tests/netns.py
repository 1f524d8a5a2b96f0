"""Running a command inside a private network namespace: Ableton Link multicasts on every
interface, so it never runs on the host network (tests and benchmarks alike).

``netns_command(argv)`` wraps ``argv`` in ``unshare -n`` with only ``lo`` up and the multicast
range routed to it; no other interface exists in there, so nothing leaves the machine. Root is
needed (CI runs as root); a missing ``unshare``/``ip`` or a refusal raises ``NetnsError`` — a
test then fails, it is never skipped.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from collections.abc import Sequence

SETUP = "ip link set lo up && ip route add 224.0.0.0/4 dev lo"


class NetnsError(RuntimeError):
    """No private network namespace could be made here."""


def netns_command(argv: Sequence[str]) -> list[str]:
    """``argv`` run in a fresh network namespace with only ``lo`` (multicast routed to it)."""
    for tool in ("unshare", "ip"):
        if shutil.which(tool) is None:
            raise NetnsError(f"{tool} is missing (util-linux and iproute2 are needed, as root)")
    return ["unshare", "-n", "sh", "-c", f"{SETUP} && exec {shlex.join(argv)}"]


def run_in_netns(argv: Sequence[str], timeout: float, **kwargs: object
                 ) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` in a private network namespace (text output captured)."""
    cmd = netns_command(argv)
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          **kwargs)  # type: ignore[call-overload]
    if done.returncode != 0 and "unshare" in done.stderr[:200]:
        raise NetnsError(f"unshare -n failed: {done.stderr.strip()}")
    return done
