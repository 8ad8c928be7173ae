"""A bridge server over the openroom backend with injected faults, for the
Rust integration tests.

  --crash-after-steps N   write a message to stderr and exit with status 7
                          in the middle of the N-th step (no reply)
  --slow-step-s S         sleep S seconds inside every step
  --garbage-step          answer steps with a line that is not JSON
"""

import argparse
import os
import sys
import time

from navkit_bridge.backends.openroom import OpenRoomBackend
from navkit_bridge.protocol import ObservationOptions
from navkit_bridge.server import Session, protocol_stdout, serve_stdio


class FaultyBackend(OpenRoomBackend):
    def __init__(self, crash_after, slow_s):
        super().__init__()
        self.crash_after, self.slow_s, self.count = crash_after, slow_s, 0

    def step(self, action):
        self.count += 1
        if self.crash_after and self.count >= self.crash_after:
            print(f"faulty_server: simulated crash in step {self.count}", file=sys.stderr, flush=True)
            os._exit(7)
        if self.slow_s:
            time.sleep(self.slow_s)
        return super().step(action)


class GarbageSession(Session):
    def handle_line(self, line):
        if b'"step"' in line:
            return b"this is not json\n"
        return super().handle_line(line)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--crash-after-steps", type=int, default=0)
    p.add_argument("--slow-step-s", type=float, default=0.0)
    p.add_argument("--garbage-step", action="store_true")
    args = p.parse_args()
    out = protocol_stdout()
    backend = FaultyBackend(args.crash_after_steps, args.slow_step_s)
    cls = GarbageSession if args.garbage_step else Session
    serve_stdio(cls(backend, ObservationOptions()), out)


if __name__ == "__main__":
    main()
