#!/usr/bin/env python3
"""Reads a navkit recording with the official Python `mcap` reader (an
independent implementation of the format) and checks what every recording
must hold; prints a JSON summary for the caller's own expectations.

    python ci/check_mcap.py run.mcap

Checks: the file has a summary with statistics; navkit's own channels
(`/navkit/step`, `/navkit/planner`) are JSON (message encoding `json`,
schema encoding `jsonschema`) and every message on them parses as JSON; the
Foxglove channels declare `foxglove.*` schemas in Protobuf (message encoding
`protobuf`, schema encoding `protobuf`, a FileDescriptorSet) — or, in files
written before navkit used the Foxglove SDK, JSON; the step log declares
`navkit.StepRecord`; log times never decrease; one `/pose` and one
`/tf` per step record; `/ground_truth/pose`, when present, one per step too.
Exit 1 with a message on the first failed check.

Prints {"channels": {topic: {"schema", "schema_encoding", "message_encoding",
"count"}}, "steps": N, "first_log_time": ns, "last_log_time": ns,
"step_actions": [...], "planner_calls": [...]}.
"""
import json
import sys

from mcap.reader import make_reader

FOXGLOVE = {
    "/pose": "foxglove.PoseInFrame",
    "/ground_truth/pose": "foxglove.PoseInFrame",
    "/tf": "foxglove.FrameTransform",
    "/ground_truth/tf": "foxglove.FrameTransform",
    "/scan": "foxglove.LaserScan",
    "/scan/points": "foxglove.PointCloud",
    "/scene/points": "foxglove.PointCloud",
    "/map": "foxglove.Grid",
    "/scene": "foxglove.SceneUpdate",
    "/camera/image": "foxglove.CompressedImage",
    "/camera/panorama": "foxglove.CompressedImage",
    "/navkit/planner/image": "foxglove.CompressedImage",
    "/navkit/step": "navkit.StepRecord",
    "/navkit/planner": "navkit.PlannerCall",
}


def fail(msg):
    print(f"check_mcap: {msg}", file=sys.stderr)
    sys.exit(1)


def main(path):
    with open(path, "rb") as f:
        reader = make_reader(f)
        summary = reader.get_summary()
        if summary is None or summary.statistics is None:
            fail("no summary section with statistics")
        channels = {}
        for ch in summary.channels.values():
            schema = summary.schemas.get(ch.schema_id)
            if schema is None:
                fail(f"channel {ch.topic} has no schema")
            encodings = (ch.message_encoding, schema.encoding)
            own = ch.topic in ("/navkit/step", "/navkit/planner")
            if encodings != ("json", "jsonschema") and (own or encodings != ("protobuf", "protobuf")):
                fail(f"channel {ch.topic}: {ch.message_encoding}/{schema.encoding}, expected "
                     + ("json/jsonschema" if own else "protobuf/protobuf (or json/jsonschema)"))
            want = FOXGLOVE.get(ch.topic)
            if want is None:
                fail(f"unexpected channel {ch.topic}")
            if schema.name != want:
                fail(f"channel {ch.topic} declares {schema.name}, expected {want}")
            if schema.encoding == "jsonschema":
                json.loads(schema.data)  # the schema itself is JSON
            channels[ch.topic] = {
                "schema": schema.name,
                "schema_encoding": schema.encoding,
                "message_encoding": ch.message_encoding,
                "count": 0,
            }
        last = -1
        first = None
        actions = []
        calls = []
        for schema, channel, message in reader.iter_messages(log_time_order=False):
            if message.log_time < last:
                fail(f"log time goes back on {channel.topic}: {message.log_time} < {last}")
            last = message.log_time
            first = message.log_time if first is None else first
            channels[channel.topic]["count"] += 1
            if channel.message_encoding != "json":
                continue  # Protobuf: ci/check_viewers.py decodes those
            body = json.loads(message.data)
            if channel.topic == "/navkit/step":
                actions.append(body["action"])
            elif channel.topic == "/navkit/planner":
                calls.append({"call": body["call"], "ok": body["reply"]["ok"],
                              "images": sum(1 for p in body["request"]["user"] if p["type"] == "image")})
            elif channel.topic in ("/pose", "/ground_truth/pose"):
                if "position" not in body["pose"] or "sec" not in body["timestamp"]:
                    fail(f"{channel.topic}: not a PoseInFrame: {body}")
        stats = summary.statistics
        total = sum(c["count"] for c in channels.values())
        if stats.message_count != total:
            fail(f"statistics count {stats.message_count} messages, read {total}")
        steps = channels.get("/navkit/step", {}).get("count", 0)
        if steps == 0:
            fail("no step records")
        for topic in ("/pose", "/tf", "/ground_truth/pose"):
            if topic in channels and channels[topic]["count"] != steps:
                fail(f"{channels[topic]['count']} messages on {topic} for {steps} steps")
        print(json.dumps({
            "channels": channels, "steps": steps, "first_log_time": first, "last_log_time": last,
            "step_actions": actions, "planner_calls": calls,
        }))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        fail("usage: check_mcap.py FILE.mcap")
    main(sys.argv[1])
