#!/usr/bin/env python3
"""A stdio server that is not there yet: exits at once with status 1 until
the file named by APPEARS_WHEN exists, then runs the program given as its
arguments (exec, so the process is that server). For supervision tests: a
server that fails at start and comes up later."""
import os
import sys

if not os.path.exists(os.environ["APPEARS_WHEN"]):
    print("appears_later: not there yet", file=sys.stderr, flush=True)
    sys.exit(1)
os.execv(sys.argv[1], sys.argv[1:])
