"""Exits at once, having counted its launch in ARG (a file). (It imports nothing, to start fast.)"""

import sys

with open(sys.argv[1], "a") as launches:
    launches.write("launched\n")
print("cannot start: no licence", file=sys.stderr)
sys.exit(1)
