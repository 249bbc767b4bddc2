"""Run a command and report its own peak RSS and CPU time: ``python -m bench.peak OUT -- CMD...``.

Linux counts in a child's peak RSS the pages it shared with its parent between ``fork`` and
``exec`` (the kernel keeps the pre-``exec`` high-water mark), so a child of the harness, which holds
the manifest of a 200,000-page web, would report the harness's memory as its own. This launcher is
small when it forks the command, so the command's ``ru_maxrss`` is the command's. It writes
``maxrss_kb user_s sys_s`` to OUT and exits with the command's status.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m bench.peak OUT -- COMMAND...", file=sys.stderr)
        return 2
    out, command = argv[0], argv[2:]
    process = subprocess.Popen(command)
    # The harness ends a run by killing the whole process group; a SIGTERM is passed on.
    signal.signal(signal.SIGTERM, lambda signum, frame: process.send_signal(signum))
    _, status, usage = os.wait4(process.pid, 0)
    with open(out, "w", encoding="ascii") as f:
        f.write(f"{usage.ru_maxrss} {usage.ru_utime} {usage.ru_stime}\n")
    code = os.waitstatus_to_exitcode(status)
    if code < 0:  # killed by a signal: end the same way, so the harness sees the signal
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
