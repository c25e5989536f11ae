"""Instructions per request over HTTP, counted by valgrind: the ratio a noisy host cannot move.

`http_throughput.py` reports the server's CPU time per request, which other work on the host,
frequency scaling and caches move by 20-30 % between runs. This counts the instructions the
server process executes instead (valgrind's callgrind, which makes them exact and repeatable)
for each target of `_http_servers.py`, over uvicorn and a real loopback connection, with the
same minimal client (one keep-alive connection, one request at a time, a new session every
`--turns-per-session` turns). Each target is run twice, for `--requests` and for three times as
many; the difference divided by the extra requests is the cost of one request, without start-up
and shutdown. Run by hand (valgrind is slow: three or four minutes on two cores):

    .venv/bin/python bench/http_instructions.py [--requests 50] [--targets memory,sqlite,bare]

Columns: millions of instructions per request, and `bare`'s count divided by the target's (the
issue 24 budget reads "at least 0.5"). Instructions do not include the kernel's work (system
calls: SQLite's writes), and an instruction that misses the cache costs more than one that does
not, so the CPU ratio of `http_throughput.py` is lower than this one; this one is what a change
to the code moves, run after run.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from http_throughput import content_length, users_for

SERVERS = Path(__file__).with_name("_http_servers.py")


def count(target: str, requests: int, per_session: int, tmp: str) -> int:
    """The instructions a `target` server executes serving `requests` requests, start to end."""
    out = Path(tmp) / f"callgrind.{target}.{requests}"
    command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable]
    command += [str(SERVERS), target, "--db", str(Path(tmp) / f"{target}.{requests}.db")]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert server.stdout is not None
    line = server.stdout.readline()
    if not line.startswith("PORT "):
        server.kill()
        raise SystemExit(f"the {target} server did not start: {line!r} {server.stderr}")
    connection = connect(int(line.split()[1]))
    user = users_for(target, 1, per_session)[0]
    for _ in range(requests):
        connection.sendall(user.request())
        head = read_until(connection, b"\r\n\r\n")
        body = read_exactly(connection, content_length(head))
        if head[9:12] != b"200":
            raise SystemExit(f"{target} answered {head[9:12].decode()}: {body[:300]!r}")
        user.answered(json.loads(body))
    connection.close()
    server.send_signal(signal.SIGINT)
    _, errors = server.communicate(timeout=120)
    found = re.search(r"Collected : (\d+)", errors)
    if found is None:
        raise SystemExit(f"valgrind printed no count for {target}: {errors[-500:]}")
    return int(found.group(1))


def connect(port: int) -> socket.socket:
    """A connection once the server (slow under valgrind) listens; it binds before it prints."""
    deadline = time.monotonic() + 120
    while True:
        try:
            connection = socket.create_connection(("127.0.0.1", port), timeout=120)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
            continue
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return connection


def read_until(connection: socket.socket, end: bytes) -> bytes:
    data = b""
    while not data.endswith(end):
        chunk = connection.recv(1)
        if not chunk:
            raise SystemExit("the server closed the connection")
        data += chunk
    return data


def read_exactly(connection: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = connection.recv(size - len(data))
        if not chunk:
            raise SystemExit("the server closed the connection")
        data += chunk
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--targets", default="memory,sqlite,bare")
    parser.add_argument("--turns-per-session", type=int, default=10)
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed: this bench counts instructions with it.")
    targets = args.targets.split(",")
    if "bare" not in targets:
        targets.append("bare")
    small, large = args.requests, 3 * args.requests
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(2) as pool:
        per_request: dict[str, float] = {}
        for target in targets:  # the two runs of a target at once: one per core
            runs = [
                pool.submit(count, target, n, args.turns_per_session, tmp) for n in (small, large)
            ]
            fewer, more = (run.result() for run in runs)
            per_request[target] = (more - fewer) / (large - small)
    print(f"instructions per /ai/run request over HTTP ({large} - {small} requests, callgrind)")
    print(f"{'target':<8} {'M instr':>8} {'bare / target':>14}")
    for target in targets:
        print(
            f"{target:<8} {per_request[target] / 1e6:>8.2f} "
            f"{per_request['bare'] / per_request[target]:>14.2f}"
        )


if __name__ == "__main__":
    main()
