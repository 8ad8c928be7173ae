#!/usr/bin/env python3
"""Checks a navkit recording, or a live run, with the viewers' own readers
(the venv ci/setup-viewers.sh makes). Prints a JSON summary for the caller
(nav-cli/tests/cli_viewers.rs); exits 1 with a message on a failed check.

    python ci/check_viewers.py mcap run.mcap
        The official `mcap` reader with `mcap-protobuf-support` decodes every
        message of every Protobuf channel into its Foxglove type; the JSON
        channels parse as JSON. Prints {"channels": {topic: {"count",
        "schema", "encoding", "decoded"}}, "samples": {topic: {...}}}.

    python ci/check_viewers.py rerun run.mcap
        Rerun (rerun-sdk's MCAP reader, with every decoder its viewer uses)
        loads the file and lists, per entity path, the archetype components
        it turned the messages into (`Archetype:field`). Prints
        {"entities": {path: [component descriptors...]}}.

    python ci/check_viewers.py live HOST:PORT SECONDS [STALL_SECONDS]
        A Foxglove WebSocket client (subprotocol foxglove.sdk.v1) connects,
        subscribes to every advertised channel and counts the messages that
        arrive for SECONDS. With STALL_SECONDS it first subscribes and then
        stops reading for that long (a viewer that hangs), then reads again.
        Prints {"channels": {topic: {"schema", "encoding", "count"}}}.
"""
import asyncio
import json
import struct
import sys
import time


def fail(msg):
    print(f"check_viewers: {msg}", file=sys.stderr)
    sys.exit(1)


def check_mcap(path):
    from mcap.reader import make_reader
    from mcap_protobuf.decoder import DecoderFactory

    channels, samples, decoders = {}, {}, {}
    factory = DecoderFactory()
    with open(path, "rb") as f:
        reader = make_reader(f)
        for schema, channel, message in reader.iter_messages():
            c = channels.setdefault(channel.topic, {
                "count": 0, "decoded": 0, "schema": schema.name, "encoding": channel.message_encoding,
            })
            c["count"] += 1
            if channel.message_encoding == "protobuf":
                if channel.id not in decoders:
                    decoders[channel.id] = factory.decoder_for(channel.message_encoding, schema)
                    if decoders[channel.id] is None:
                        fail(f"{channel.topic}: mcap-protobuf-support has no decoder for {schema.name}")
                decoded = decoders[channel.id](message.data)
                # the decoded message's full name is the channel's schema name
                name = decoded.DESCRIPTOR.full_name
                if name != schema.name:
                    fail(f"{channel.topic}: decoded as {name}, the channel declares {schema.name}")
                c["decoded"] += 1
                if channel.topic not in samples:
                    samples[channel.topic] = summary_of(decoded)
            elif channel.message_encoding == "json":
                json.loads(message.data)
                c["decoded"] += 1
            else:
                fail(f"{channel.topic}: unexpected message encoding {channel.message_encoding}")
    print(json.dumps({"channels": channels, "samples": samples}))


def summary_of(msg):
    """A few fields of a decoded Foxglove message, for the caller to check."""
    out = {"type": msg.DESCRIPTOR.full_name}
    for field, value in msg.ListFields():
        if field.name in ("data",):
            out["data_bytes"] = len(value)
        elif field.name in ("ranges",):
            out["ranges"] = len(value)
        elif field.name in ("entities",):
            out["entities"] = sorted(e.id for e in value)
        elif field.name in ("format", "frame_id", "parent_frame_id", "child_frame_id", "column_count"):
            out[field.name] = value
    return out


def check_rerun(path):
    from rerun.chunk import McapReader

    # every decoder Rerun has (Foxglove's Protobuf schemas, raw, ...), as its viewer loads a file
    entities = {}
    for chunk in McapReader(str(path)).stream().to_chunks():
        batch = chunk.to_record_batch()
        cols = entities.setdefault(str(chunk.entity_path), set())
        for field in batch.schema:
            meta = {k.decode(): v.decode() for k, v in (field.metadata or {}).items()}
            component = meta.get("rerun:component") or meta.get("rerun.component")
            if component:
                cols.add(component)
    print(json.dumps({"entities": {k: sorted(v) for k, v in entities.items()}}))


async def live(addr, seconds, stall):
    import websockets
    import websockets.exceptions

    uri = f"ws://{addr}"
    deadline = time.monotonic() + 30
    while True:
        try:
            ws = await websockets.connect(uri, subprotocols=["foxglove.sdk.v1"], max_size=None)
            break
        except OSError:
            if time.monotonic() > deadline:
                fail(f"cannot connect to {uri}")
            await asyncio.sleep(0.2)
    channels, subs, next_sub = {}, {}, 1
    end = time.monotonic() + seconds
    stalled = stall <= 0
    async with ws:
        if ws.subprotocol != "foxglove.sdk.v1":
            fail(f"the server chose subprotocol {ws.subprotocol}")
        while time.monotonic() < end:
            try:
                frame = await asyncio.wait_for(ws.recv(), timeout=max(0.05, end - time.monotonic()))
            except (asyncio.TimeoutError, websockets.exceptions.ConnectionClosed, OSError):
                break  # the time is up, or the run ended and its server closed
            if isinstance(frame, str):
                msg = json.loads(frame)
                if msg.get("op") == "advertise":
                    new = []
                    for ch in msg["channels"]:
                        channels[ch["id"]] = {"topic": ch["topic"], "schema": ch.get("schemaName", ""),
                                              "encoding": ch["encoding"], "count": 0}
                        subs[next_sub] = ch["id"]
                        new.append({"id": next_sub, "channelId": ch["id"]})
                        next_sub += 1
                    try:
                        await ws.send(json.dumps({"op": "subscribe", "subscriptions": new}))
                    except (websockets.exceptions.ConnectionClosed, OSError):
                        break
                    if not stalled:
                        # a viewer that hangs: subscribed, reads nothing for `stall` seconds
                        stalled = True
                        await asyncio.sleep(stall)
                        end = time.monotonic() + seconds
            elif frame and frame[0] == 0x01:
                sub, _log_time = struct.unpack_from("<IQ", frame, 1)
                ch = channels.get(subs.get(sub))
                if ch is None:
                    fail(f"a message for unknown subscription {sub}")
                ch["count"] += 1
    out = {c["topic"]: {k: v for k, v in c.items() if k != "topic"} for c in channels.values()}
    print(json.dumps({"channels": out}))


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "mcap":
        check_mcap(sys.argv[2])
    elif len(sys.argv) >= 3 and sys.argv[1] == "rerun":
        check_rerun(sys.argv[2])
    elif len(sys.argv) >= 4 and sys.argv[1] == "live":
        stall = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
        asyncio.run(live(sys.argv[2], float(sys.argv[3]), stall))
    else:
        fail("usage: check_viewers.py mcap FILE | rerun FILE | live HOST:PORT SECONDS [STALL_SECONDS]")


if __name__ == "__main__":
    main()
