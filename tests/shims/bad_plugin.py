"""A plugin binary that gets the go-plugin handshake wrong on purpose.

    python tests/shims/bad_plugin.py MODE

silent (never prints a handshake), malformed, exit (exits at once),
netrpc (wrong protocol), mtls (sends a certificate), wrong-version.
"""

import sys
import time

MODE = sys.argv[1]
LINES = {"malformed": "hello from a plugin", "netrpc": "1|1|unix|/tmp/none.sock|netrpc",
         "mtls": "1|1|unix|/tmp/none.sock|grpc|MIIBCERTIFICATE", "wrong-version": "1|7|unix|/tmp/none.sock|grpc"}

if MODE == "exit":
    print("plugin exploded during start-up", file=sys.stderr)
    sys.exit(3)
if MODE in LINES:
    print(LINES[MODE], flush=True)
time.sleep(60)
