#!/usr/bin/python3
"""A stand-in for toolexecd that never answers, for bench_load's own test.

Takes toolexecd's flags, listens on 127.0.0.1:0, writes the address to
--address_file, accepts connections and never sends a byte, and ignores
SIGTERM. bench_load must end against it with a failure naming the stuck
batches and the daemon it had to kill, instead of waiting forever.
"""

import signal
import socket
import sys
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
address_file = next(a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--address_file="))
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(64)
with open(address_file + ".tmp", "w") as f:
    f.write("127.0.0.1:%d\n" % listener.getsockname()[1])
import os  # noqa: E402

os.rename(address_file + ".tmp", address_file)
held = []
listener.settimeout(1)
deadline = time.monotonic() + 600  # bounded even if nobody kills it
while time.monotonic() < deadline:
    try:
        conn, _ = listener.accept()
        held.append(conn)
    except socket.timeout:
        pass
