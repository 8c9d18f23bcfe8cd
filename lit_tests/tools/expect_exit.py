#!/usr/bin/env python3
"""expect_exit.py STATUS COMMAND [ARGS...]: run COMMAND, copy its stdout and stderr (merged) to stdout,
then print "exit status: N". Exits 0 when N == STATUS, else 1, so a RUN line can check an exact exit
status (lit's `not` only checks "non-zero") and FileCheck the message in the same pipeline.
"""
import subprocess
import sys


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    want = int(argv[1])
    proc = subprocess.run(argv[2:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    sys.stdout.write(proc.stdout.decode(errors="replace"))
    print(f"exit status: {proc.returncode}")
    return 0 if proc.returncode == want else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
