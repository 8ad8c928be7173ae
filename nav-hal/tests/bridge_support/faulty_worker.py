"""A detector worker with injected faults, chosen by the request's target,
for the Rust integration tests of the worker ops:

  "garbage"   answer with a line that is not JSON
  "slow"      sleep --slow-s seconds, then answer "not seen"
  "crash"     write a message to stderr and exit with status 7 (no reply)
  "bad box"   a box outside the image
  "bad score" a score outside [0, 1]
  "no seen"   a reply without the seen field
  anything else: the colour detector's answer
"""

import argparse
import os
import sys
import time

from navkit_bridge.colour_detector import ColourDetector
from navkit_bridge.worker import run_worker


class FaultyDetector(ColourDetector):
    name = "faulty-detector"

    def __init__(self, slow_s):
        super().__init__()
        self.slow_s = slow_s

    def handle_line(self, line):
        if b'"garbage"' in line:
            return b"this is not json\n"
        if b'"crash"' in line:
            print("faulty_worker: simulated crash", file=sys.stderr, flush=True)
            os._exit(7)
        return super().handle_line(line)

    def detect(self, msg):
        target = msg.get("target")
        if target == "slow":
            time.sleep(self.slow_s)
            return {"seen": False, "bbox": None}
        if target == "bad box":
            return {"seen": True, "bbox": [0, 0, 9999, 3], "score": 0.9}
        if target == "bad score":
            return {"seen": True, "bbox": [0, 0, 1, 1], "score": 2.0}
        if target == "no seen":
            return {"bbox": [0, 0, 1, 1]}
        return super().detect(msg)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--slow-s", type=float, default=2.0)
    sys.exit(run_worker(FaultyDetector(p.parse_args().slow_s)))
