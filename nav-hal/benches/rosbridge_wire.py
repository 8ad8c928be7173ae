#!/usr/bin/env python3
"""A named peer for `cargo bench --bench rosbridge -- image_wire`: the same
rosbridge camera frames decoded to a message with Python's `json` + `base64`
(what roslibpy and rosbridge's own JSON path do) and with `cbor2` (rosbridge
encodes its `compression: "cbor"` frames with a CBOR library of this kind).

    mkdir -p /tmp/wire && NAVKIT_WIRE_DIR=/tmp/wire \\
        cargo bench -p nav-hal --features rosbridge --bench rosbridge -- image_wire/none
    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install cbor2
    /tmp/venv/bin/python nav-hal/benches/rosbridge_wire.py /tmp/wire

Prints the median time per frame over 50 runs.
"""

import base64
import json
import statistics
import sys
import time
from pathlib import Path

import cbor2


def median_ms(fn, data, runs=50):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn(data)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def from_json(text):
    msg = json.loads(text)["msg"]
    return base64.b64decode(msg["data"])


def from_cbor(data):
    return cbor2.loads(data)["msg"]["data"]


def main():
    wire = Path(sys.argv[1])
    for kind in ["rgb8_noisy", "16uc1_noisy"]:
        raw = (wire / f"{kind}_raw.json").read_bytes()
        cbor = (wire / f"{kind}_cbor.cbor").read_bytes()
        assert from_json(raw) == from_cbor(cbor), "both forms carry the same pixels"
        print(f"{kind} raw JSON + base64: {median_ms(from_json, raw):.2f} ms ({len(raw)} bytes)")
        print(f"{kind} cbor2:             {median_ms(from_cbor, cbor):.2f} ms ({len(cbor)} bytes)")


if __name__ == "__main__":
    main()
