"""Load and reconnects against one ChatServer, with the server's memory read from outside.

    python3 Examples/ChatServer/Tests/load_test.py PATH_TO_CHATSERVER [SECONDS]

40 rooms x 25 readers (1,000 connections with ?after=), one sender per room at 10 lines/s; every
reader leaves and comes back with its last position every 4 to 40 s. At the end every reader
must have received every line of its room exactly once, in order, through all its resumes, with
no reset; and the server's resident memory, read every 20 s, must stay within 10% of its value
after the first minute. Not part of CI (it runs for minutes); figures go in the chat README.
"""

import asyncio
import json
import os
import random
import subprocess
import sys
import time
import urllib.request

import websockets

SERVER = sys.argv[1]
SECONDS = int(sys.argv[2]) if len(sys.argv) > 2 else 240
ROOMS, READERS, RATE = 40, 25, 10


def free_port():
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


PORT = free_port()
process = subprocess.Popen([SERVER], env=dict(os.environ, PORT=str(PORT), LOG_LEVEL="error"))


def rss_mb():
    with open(f"/proc/{process.pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024


def url(room, after=""):
    return f"ws://127.0.0.1:{PORT}/rooms/room{room}?after={after}"


async def sender(room, sent, stop):
    # A plain-text connection: it reads its own lines too, or the server would drop it as too slow.
    async with websockets.connect(f"ws://127.0.0.1:{PORT}/rooms/room{room}", max_queue=None) as client:
        draining = asyncio.create_task(drain(client))
        number = 0
        while not stop.is_set():
            await client.send(f"{room}:{number}")
            sent[room] = number + 1
            number += 1
            await asyncio.sleep(1 / RATE)
        draining.cancel()


async def drain(client):
    async for _ in client:
        pass


async def reader(room, received, resets, stop):
    position, heard = "", []
    received.append(heard)
    while not stop.is_set():
        leave_at = time.monotonic() + random.uniform(4, 40)
        async with websockets.connect(url(room, position), max_queue=None) as client:
            while time.monotonic() < leave_at and not stop.is_set():
                try:
                    frame = json.loads(await asyncio.wait_for(client.recv(), timeout=1))
                except asyncio.TimeoutError:
                    continue
                if "start" in frame:
                    position = frame["start"] if not position else position
                elif "reset" in frame:
                    resets.append(frame)
                else:
                    position = frame["position"]
                    heard.append(frame["text"])


async def main():
    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{PORT}/stats", timeout=1)
            break
        except OSError:
            await asyncio.sleep(0.1)
    stop = asyncio.Event()
    sent = [0] * ROOMS
    received = {room: [] for room in range(ROOMS)}
    resets = []
    readers = [asyncio.create_task(reader(room, received[room], resets, stop)) for room in range(ROOMS) for _ in range(READERS)]
    await asyncio.sleep(2)  # every reader is in before the first line
    senders = [asyncio.create_task(sender(room, sent, stop)) for room in range(ROOMS)]
    readings, started = [], time.monotonic()
    while time.monotonic() - started < SECONDS:
        await asyncio.sleep(20)
        readings.append((round(time.monotonic() - started), round(rss_mb())))
        print(f"{readings[-1][0]} s: RSS {readings[-1][1]} MB", flush=True)
    stop.set()
    await asyncio.gather(*senders)
    await asyncio.sleep(3)  # the last lines reach the readers still connected
    await asyncio.gather(*readers, return_exceptions=True)
    process.terminate()
    # Exactly once and in order: a reader's lines are a prefix of its room's, then nothing else.
    deliveries, exact = 0, True
    for room in range(ROOMS):
        expected = [f"{room}:{number}" for number in range(sent[room])]
        for heard in received[room]:
            deliveries += len(heard)
            if heard != expected[: len(heard)] or len(heard) < sent[room] - RATE * 45:
                exact = False
    after_minute = [mb for seconds, mb in readings if seconds >= 60]
    flat = max(after_minute) <= after_minute[0] * 1.1
    print(f"deliveries {deliveries}, exact and in order: {exact}, resets {len(resets)}")
    print(f"RSS after the first minute: {after_minute} MB, within 10%: {flat}")
    sys.exit(0 if exact and flat and not resets else 1)


asyncio.run(main())
