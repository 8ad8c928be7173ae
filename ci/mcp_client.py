#!/usr/bin/env python3
"""Drives `nav mcp` with the official MCP Python SDK (`mcp` on PyPI) as the client.

Usage:
  mcp_client.py SCENARIO --nav PATH [--url URL] [-- extra nav mcp args]

Scenarios (each prints one JSON object on stdout; nav-cli/tests/mcp_python.rs checks it):
  basic    initialize, tools/list, move_toward forward, get_state, observe_scene, get_map,
           resources (over stdio, or over Streamable HTTP with --url)
  wall     move_toward forward fast toward a wall, over and over
  silent   a motion call, then silence: when does the robot reach zero velocity?
  lease    two clients over HTTP (--url): the second one's motion call during the first one's lease
  latency  tool call latency: get_state, check_path_clear, move_toward (median and p95, ms)
"""

import argparse
import asyncio
import base64
import json
import statistics
import sys
import time
from contextlib import AsyncExitStack

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation


def texts(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def images(result):
    return [c for c in result.content if getattr(c, "type", "") == "image"]


async def open_session(stack, args, name="navkit-test"):
    if args.url:
        import httpx2

        headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
        client = await stack.enter_async_context(httpx2.AsyncClient(headers=headers, timeout=30.0))
        read, write = await stack.enter_async_context(streamable_http_client(args.url, http_client=client))
    else:
        params = StdioServerParameters(command=args.nav, args=["mcp", *args.extra])
        read, write = await stack.enter_async_context(stdio_client(params))
    session = await stack.enter_async_context(
        ClientSession(read, write, client_info=Implementation(name=name, version="1.0"))
    )
    init = await session.initialize()
    return session, init


async def state(session):
    r = await session.call_tool("get_state", {})
    return r.structured_content, texts(r)


async def basic(args):
    out = {}
    async with AsyncExitStack() as stack:
        s, init = await open_session(stack, args)
        out["server"] = init.server_info.name
        out["protocol"] = init.protocol_version
        tools = (await s.list_tools()).tools
        out["tools"] = sorted(t.name for t in tools)
        mt = next(t for t in tools if t.name == "move_toward")
        out["move_toward_schema"] = mt.input_schema
        before, _ = await state(s)
        # find a clear direction first, as an agent would
        r = await s.call_tool("check_path_clear", {"direction": "forward", "distance_m": 1.0})
        out["check_path_clear"] = texts(r)
        turns = 0
        while '"clear":false' in texts(r).replace(" ", "") and turns < 8:
            await s.call_tool("rotate", {"degrees": 45})
            await asyncio.sleep(2.5)
            r = await s.call_tool("check_path_clear", {"direction": "forward", "distance_m": 1.0})
            turns += 1
        start, _ = await state(s)
        r = await s.call_tool("move_toward", {"direction": "forward", "speed": "medium", "duration_s": 3})
        out["move_is_error"] = bool(r.is_error)
        out["move_text"] = texts(r)
        await asyncio.sleep(1.5)
        after, after_text = await state(s)
        out["moved_m"] = ((after["pose"]["x"] - start["pose"]["x"]) ** 2 + (after["pose"]["y"] - start["pose"]["y"]) ** 2) ** 0.5
        out["state_text"] = after_text
        out["t_before"] = before["t_s"]
        out["t_after"] = after["t_s"]
        r = await s.call_tool("observe_scene", {"focus": "general"})
        imgs = images(r)
        out["observe_images"] = [i.mime_type for i in imgs]
        out["observe_jpeg"] = bool(imgs) and base64.b64decode(imgs[0].data)[:2] == b"\xff\xd8"
        out["observe_text"] = texts(r)
        r = await s.call_tool("get_map", {})
        imgs = images(r)
        out["map_png"] = bool(imgs) and base64.b64decode(imgs[0].data)[:8] == b"\x89PNG\r\n\x1a\n"
        r = await s.call_tool("move_toward", {"direction": "sideways", "speed": "fast", "duration_s": 3})
        out["invalid_is_error"] = bool(r.is_error)
        out["invalid_text"] = texts(r)
        res = (await s.list_resources()).resources
        out["resources"] = sorted(str(x.uri) for x in res)
        out["memory"] = (await s.read_resource("navkit://memory/exploration")).contents[0].text
        out["context"] = (await s.read_resource("navkit://memory/navigation-context")).contents[0].text
        r = await s.call_tool("stop_robot", {"reason": "user_requested"})
        out["stop_is_error"] = bool(r.is_error)
    return out


async def wall(args):
    out = {"calls": []}
    async with AsyncExitStack() as stack:
        s, _ = await open_session(stack, args)
        t_end = time.monotonic() + args.seconds
        while time.monotonic() < t_end:
            r = await s.call_tool("move_toward", {"direction": "forward", "speed": "fast", "duration_s": 8})
            out["calls"].append({"error": bool(r.is_error), "text": texts(r), "json": r.structured_content})
            await asyncio.sleep(0.4)
        final, text = await state(s)
        out["final"] = final
        out["final_text"] = text
        out["memory"] = (await s.read_resource("navkit://memory/exploration")).contents[0].text
    return out


async def silent(args):
    out = {}
    async with AsyncExitStack() as stack:
        s, _ = await open_session(stack, args)
        r = await s.call_tool("move_toward", {"direction": "forward", "speed": "slow", "duration_s": 8})
        out["move_is_error"] = bool(r.is_error)
        out["move_text"] = texts(r)
        called, _ = await state(s)
        out["t_call"] = called["t_s"] - called["since_last_motion_call_s"]
        samples = []
        t_end = time.monotonic() + args.seconds
        while time.monotonic() < t_end:
            st, _ = await state(s)
            samples.append({"t": st["t_s"], "speed": st["speed_mps"], "tier": st["watchdog_tier"],
                            "cmd": (st["last_command"] or {}).get("linear_mps")})
            await asyncio.sleep(0.1)
        out["samples"] = samples
        out["watchdog_s"] = called["watchdog_stop_after_s"]
    return out


async def lease(args):
    out = {}
    async with AsyncExitStack() as stack:
        a, _ = await open_session(stack, args, "driver-a")
        async with AsyncExitStack() as stack_b:
            b, _ = await open_session(stack_b, args, "driver-b")
            r = await a.call_tool("rotate", {"degrees": 45})
            out["a_is_error"] = bool(r.is_error)
            r = await b.call_tool("move_toward", {"direction": "forward", "speed": "slow", "duration_s": 2})
            out["b_is_error"] = bool(r.is_error)
            out["b_text"] = texts(r)
            st, text = await state(b)
            out["b_state_ok"] = st is not None and "pose" in st
            out["b_state_text"] = text
            r = await a.call_tool("rotate", {"degrees": -45})
            out["a_again_is_error"] = bool(r.is_error)
            r = await b.call_tool("stop_robot", {"reason": "user_requested"})
            out["b_stop_is_error"] = bool(r.is_error)
            out["b_stop_text"] = texts(r)
        # b has left; a still drives
        r = await a.call_tool("rotate", {"degrees": 45})
        out["a_after_b_left_is_error"] = bool(r.is_error)
    # a has left: a new client may drive
    async with AsyncExitStack() as stack:
        c, _ = await open_session(stack, args, "driver-c")
        await asyncio.sleep(0.5)
        r = await c.call_tool("rotate", {"degrees": 45})
        out["c_after_a_left_is_error"] = bool(r.is_error)
        out["c_text"] = texts(r)
    return out


async def latency(args):
    out = {}
    async with AsyncExitStack() as stack:
        s, _ = await open_session(stack, args)
        calls = [
            ("get_state", {}),
            ("check_path_clear", {"direction": "forward", "distance_m": 2.0}),
            ("rotate", {"degrees": 45}),
        ]
        for name, a in calls:
            times = []
            for _ in range(args.n):
                t0 = time.perf_counter()
                await s.call_tool(name, a)
                times.append((time.perf_counter() - t0) * 1000.0)
            times.sort()
            out[name] = {"n": len(times), "median_ms": statistics.median(times),
                         "p95_ms": times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]}
        await s.call_tool("stop_robot", {"reason": "user_requested"})
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("scenario", choices=["basic", "wall", "silent", "lease", "latency"])
    p.add_argument("--nav", required=True)
    p.add_argument("--url")
    p.add_argument("--token")
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--n", type=int, default=100)
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    args = p.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    args.extra = extra
    result = asyncio.run(globals()[args.scenario](args))
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
