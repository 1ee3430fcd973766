"""Drives a real ChatServer process with real WebSocket clients over 127.0.0.1.

    python3 Tests/chat_test.py PATH_TO_CHATSERVER [SCENARIO ...]

Every scenario starts its own server on a free port, bounds every wait with a timeout that
fails loudly, and stops the server afterwards. Scenarios: rooms, churn, slow, slow-drop (a client
that asked to keep up is told what it lost), sigterm, resume
(positions and history with ?after=), memory (40,000 connections opened and closed while the
server's memory is read), relay (two instances sharing rooms through PostgreSQL),
hostile (hostile rows and notifications under two instances), observability (metrics scraped
from /metrics, and a line's trace from one instance's frame to the other's socket write) and
fleet (a client resuming on the other instance with its position) and presence (a room's
connections counted across two instances, and an instance killed with SIGKILL leaving the count
within the expiry), and memory-relay (memory, 40,000 connections in batches of 5,000, with the
relay's presence); those six run when
PGHOST is set, and each again as NAME-sqlite on the embedded relay (two instances sharing one
SQLite file), which needs no server and always runs.
"""

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import traceback
import urllib.request

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

SERVER = os.path.abspath(sys.argv[1])


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def poll(read, until, timeout, failure):
    """Calls `read` (on a thread: it may do HTTP) until `until` holds for what it returns, and
    returns that; raises AssertionError(failure(last value)) after `timeout` s. Only for values
    that nothing announces (/stats, /metrics, /traces); the timeout is a hang guard."""
    deadline = time.monotonic() + timeout
    while True:
        value = await asyncio.to_thread(read)
        if until(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(failure(value))
        await asyncio.sleep(0.05)


class Server:
    """One ChatServer process, on its own port."""

    def __init__(self, **environment):
        self.environment = environment
        self.port = free_port()
        env = dict(os.environ, PORT=str(self.port), LOG_LEVEL="error")
        env.update({key: str(value) for key, value in environment.items()})
        self.process = subprocess.Popen([SERVER], env=env)
        deadline = time.monotonic() + 30
        while True:
            try:
                self.stats()
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError("the server did not start listening within 30 s")
                time.sleep(0.05)  # waiting for the port to open: there is no event to wait on

    @property
    def engine(self):
        """The relay's engine ("sqlite", "postgres"), or None."""
        return self.environment.get("CHAT_RELAY")

    @property
    def destination(self):
        """Where the relay meets the others, as its metrics and spans name it: the channel, or the file's name."""
        if self.engine == "sqlite":
            return os.path.basename(self.environment["CHAT_RELAY_PATH"])
        return self.environment["CHAT_RELAY_CHANNEL"]

    def url(self, room):
        return f"ws://127.0.0.1:{self.port}/rooms/{room}"

    def stats(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/stats", timeout=5) as response:
            return json.load(response)

    def rss_kb(self):
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise AssertionError("no VmRSS")

    async def wait_for_subscribers(self, expected, timeout):
        await poll(
            self.stats,
            lambda stats: stats["subscribers"] == expected,
            timeout,
            lambda stats: f"subscribers stayed {stats['subscribers']}, expected {expected}",
        )

    def metrics(self):
        """`GET /metrics`, parsed: {(name, frozenset of label pairs): value}."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as response:
            assert response.headers["Content-Type"].startswith("text/plain"), response.headers["Content-Type"]
            text = response.read().decode()
        samples = {}
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            series, value = line.rsplit(" ", 1)
            name, _, labels = series.partition("{")
            pairs = frozenset(tuple(pair.split("=", 1)) for pair in labels.rstrip("}").split(",") if pair)
            samples[(name, frozenset((key, value.strip('"')) for key, value in pairs))] = float(value)
        return samples

    def traces(self):
        """`GET /traces`: the ended spans, and how many have begun and not ended."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/traces", timeout=5) as response:
            return json.load(response)

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


async def rooms(server):
    """3 rooms x 20 clients: each gets exactly its room's lines, in one order shared by the room."""
    room_names = ["red", "green", "blue"]
    clients = {room: [await connect(server.url(room)) for _ in range(20)] for room in room_names}
    await server.wait_for_subscribers(60, timeout=30)
    # Without the relay, a room's presence is this instance's connections in it.
    assert [room_presence(server, room) for room in room_names] == [20, 20, 20]
    lines_per_client = 10

    async def speak(room, index, client):
        for number in range(lines_per_client):
            await client.send(f"{room}/{index}/{number}")

    async def listen(client, count):
        return [await client.recv() for _ in range(count)]

    expected = 20 * lines_per_client
    listeners = {
        room: [asyncio.create_task(listen(client, expected)) for client in clients[room]] for room in room_names
    }
    await asyncio.gather(
        *(speak(room, index, client) for room in room_names for index, client in enumerate(clients[room]))
    )
    for room in room_names:
        heard = await asyncio.wait_for(asyncio.gather(*listeners[room]), timeout=60)
        first = heard[0]
        assert all(sequence == first for sequence in heard), f"{room}: clients heard different orders"
        assert all(line.startswith(room + "/") for line in first), f"{room}: heard another room's line"
        assert sorted(first) == sorted(
            f"{room}/{index}/{number}" for index in range(20) for number in range(lines_per_client)
        ), f"{room}: lines missing or repeated"
        for index in range(20):
            own = [line for line in first if line.startswith(f"{room}/{index}/")]
            assert own == [f"{room}/{index}/{number}" for number in range(lines_per_client)], "a sender's order broke"
    for room in room_names:
        for client in clients[room]:
            await client.close()
    await server.wait_for_subscribers(0, timeout=30)
    print("rooms: 3 rooms x 20 clients, 200 lines each, one order per room")


async def churn(server):
    """1,000 connect/send/disconnect cycles, a third dropping TCP without a close frame."""
    cycles = 1_000
    dropped = 0

    async def cycle(number):
        nonlocal dropped
        async with connect(server.url(f"churn{number % 7}")) as client:
            await client.send(f"hello {number}")
            await asyncio.wait_for(client.recv(), timeout=30)  # its own line: it was subscribed
            if number % 3 == 0:
                dropped += 1
                client.transport.abort()  # no close frame, no FIN handshake: a reset

    limit = asyncio.Semaphore(25)

    async def bounded(number):
        async with limit:
            try:
                await cycle(number)
            except ConnectionClosed:
                pass  # the aborted ones end here when the context manager tries to close

    await asyncio.wait_for(asyncio.gather(*(bounded(number) for number in range(cycles))), timeout=240)
    await server.wait_for_subscribers(0, timeout=30)
    print(f"churn: {cycles} cycles ({dropped} dropped without a close frame), subscribers back to 0")


async def slow(server):
    """A client that stops reading is evicted; the server's memory stays flat meanwhile."""
    room = server.url("soak")
    stalled = await connect(room, max_queue=1)  # reads nothing: its socket buffers fill up
    poster = await connect(room, max_size=None)
    await server.wait_for_subscribers(2, timeout=30)
    baseline = server.rss_kb()
    peak = baseline
    payload = "x" * 1_000
    posts, burst = 40_000, 1_000
    heard = 0
    for start in range(0, posts, burst):
        # A burst of a thousand lines, then the poster reads its own echoes: a reading client.
        for number in range(start, start + burst):
            await poster.send(f"{number:08d}{payload}")
        for number in range(start, start + burst):
            line = await asyncio.wait_for(poster.recv(), timeout=30)
            assert line.startswith(f"{number:08d}"), "the reading client lost or reordered a line"
            heard += 1
        peak = max(peak, server.rss_kb())
    stats = await asyncio.to_thread(server.stats)
    growth_mb = (peak - baseline) / 1024
    limit_mb = 24
    assert stats["subscribers"] == 1, f"the stalled client was not evicted: {stats}, RSS grew {growth_mb:.1f} MB"
    assert growth_mb < limit_mb, f"RSS grew by {growth_mb:.1f} MB (limit {limit_mb} MB)"
    await poster.close()
    stalled.transport.abort()
    print(f"slow: stalled client evicted; reading client heard all {heard}; RSS growth {growth_mb:.1f} MB")


async def slow_drop(server):
    """A client that asked to keep up (?slow=drop) and stops reading keeps its subscription, and
    is told what it lost, in order: lines received plus lines lost are the lines posted."""
    room = server.url("keepup")
    stalled = await connect(room + "?slow=drop", max_queue=1, max_size=None)  # reads nothing for now
    poster = await connect(room, max_size=None)
    await server.wait_for_subscribers(2, timeout=30)
    payload = "x" * 1_000
    # Bursts of half the limit: the poster, a plain connection that reads its echoes after each
    # burst, never falls SLOW_LIMIT lines behind itself, however fast the server is.
    posts, burst = 20_000, 500
    for start in range(0, posts, burst):
        for number in range(start, start + burst):
            await poster.send(f"{number:08d}{payload}")
        for number in range(start, start + burst):
            line = await asyncio.wait_for(poster.recv(), timeout=30)
            assert line.startswith(f"{number:08d}"), "the reading client lost or reordered a line"
    await poster.send("end")
    assert await asyncio.wait_for(poster.recv(), timeout=30) == "end"
    stats = await asyncio.to_thread(server.stats)
    assert stats["subscribers"] == 2, f"the client that asked to keep up was ended: {stats}"
    received, lost, previous = 0, 0, -1
    while True:
        frame = json.loads(await asyncio.wait_for(stalled.recv(), timeout=30))
        if "lost" in frame:
            assert frame["lost"] > 0, f"an empty loss: {frame}"
            lost += frame["lost"]
            continue
        if frame["text"] == "end":
            break
        number = int(frame["text"][:8])
        assert number > previous, f"line {number} after line {previous}"
        assert number == received + lost, f"line {number} where {received + lost} lines were accounted for"
        previous = number
        received += 1
    assert received + lost == posts, f"{received} lines received + {lost} lost != {posts} posted"
    assert lost > 0, f"nothing was dropped: the client's socket took all {posts} lines"
    await poster.close()
    await stalled.close()
    print(f"slow-drop: {received} lines received + {lost} told lost = {posts} posted, in order")


async def sigterm(server):
    """SIGTERM with a stalled client connected: every socket closes and the process exits in time."""
    room = server.url("shutdown")
    stalled = await connect(room, max_queue=1)
    listener = await connect(room, max_size=None)
    poster = await connect(room, max_size=None)
    await server.wait_for_subscribers(3, timeout=30)
    payload = "y" * 1_000
    # Enough to fill the stalled client's socket buffers, in bursts the others keep up with.
    for start in range(0, 20_000, 1_000):
        for number in range(start, start + 1_000):
            await poster.send(payload)
        for client in (poster, listener):
            for _ in range(1_000):
                await asyncio.wait_for(client.recv(), timeout=30)
    started = time.monotonic()
    server.process.send_signal(signal.SIGTERM)
    # The group's own limit is 120 s here (SHUTDOWN_LIMIT): exiting within this 30 s guard means
    # closing the mailroom ended every connection, the stalled one included.
    code = await asyncio.wait_for(asyncio.to_thread(server.process.wait), timeout=30)
    elapsed = time.monotonic() - started
    assert code == 0, f"exit code {code}"
    await asyncio.wait_for(listener.wait_closed(), timeout=30)
    # An orderly close: 1001 from the chat server once the mailroom closes, or 1000 when
    # Hummingbird's own graceful shutdown of the connection gets there first (a race between the two).
    assert listener.close_code in (1000, 1001), f"the listener was closed with {listener.close_code}"
    stalled.transport.abort()
    print(f"sigterm: exited with 0 in {elapsed:.2f} s with a stalled client; others closed with {listener.close_code}")


async def synchronise(sender, receiver, tag):
    """Returns once a line from `sender`'s instance reaches `receiver`: both relays listen."""
    for attempt in range(100):
        await sender.send(f"sync {tag} {attempt}")
        try:
            while True:
                line = await asyncio.wait_for(receiver.recv(), timeout=0.5)
                if line.startswith(f"sync {tag}"):
                    return
        except asyncio.TimeoutError:
            continue
    raise AssertionError("the instances never heard each other")


async def connected_pair(server, other):
    """A client on each instance's room "shared", once each instance's relay hears the other's."""
    here = await connect(server.url("shared"), max_size=None)
    there = await connect(other.url("shared"), max_size=None)
    await server.wait_for_subscribers(1, timeout=30)
    await other.wait_for_subscribers(1, timeout=30)
    await synchronise(here, there, "a")
    await synchronise(there, here, "b")
    return here, there


async def hear_line(client, expected):
    """Waits up to 30 s for `expected`, passing over sync lines and the client's own echoes."""
    async def hear():
        while (await client.recv()) != expected:
            pass

    await asyncio.wait_for(hear(), timeout=30)


# What any role that may write the table, or only connect (NOTIFY needs no right), can send.
HOSTILE = [
    '{"o":"x","n":9223372036854775807,"t":"chat.line","st":"chat.room","s":{"name":"shared"},"c":2,"m":[{"text":"a"},{"text":"b"}]}',
    '{"o":"x","n":-9223372036854775808,"t":"chat.line","st":"chat.room","s":{"name":"shared"},"c":1,"m":[{"text":"a"}]}',
    '{"o":"x","n":1,"t":"chat.line","st":"chat.room","s":{"name":"shared"},"c":9223372036854775807,"m":[{"text":"a"}]}',
    '{"o":"x","n":1,"t":"chat.line","st":"chat.room","s":{"name":"shared"},"c":0,"m":[]}',
    '{"o":"x","h":9223372036854775807}',
    '{"o":"x","n":1,"c":3,"r":1}',
    '{"o":"x","n":"1","t":7,"c":true,"m":{}}',
    "[" * 7_000,
    "not json",
]


def write_hostile_file(path):
    """What any program of the file's owner can write: the hostile payloads as rows, rows that are
    not text, presence rows and changed topics no relay writes; and datagrams of another size on
    every wake-up socket."""
    import sqlite3

    database = sqlite3.connect(path, timeout=30)
    with database:
        now = int(time.time() * 1000)
        rows = [(now, payload) for payload in HOSTILE] + [(now, b"\x00\xff"), (now, 7), (now, 1.5)]
        database.executemany("INSERT INTO asyncmail_relay (at, payload) VALUES (?, ?)", rows)
        database.execute(
            "INSERT INTO asyncmail_relay_presence (instance, topic, key, meta, signature) VALUES"
            " ('x', 'shared', 'k', 'not json', ''), ('x', x'00', 'k', '{}', '')"
        )
        database.execute("INSERT INTO asyncmail_relay_presence_changes (topic) VALUES ('shared'), (x'00ff'), ('')")
    database.close()
    folder = path + ".wake"
    for name in os.listdir(folder):
        if name.endswith(".sock"):
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as stranger:
                stranger.sendto(b"not a nudge", os.path.join(folder, name))
                stranger.sendto(b"\x01", os.path.join(folder, name))


async def hostile(server):
    """Hostile rows and notifications under two running instances: neither crashes, both still relay."""
    other = Server(**server.environment)
    try:
        here, there = await connected_pair(server, other)
        if server.engine == "sqlite":
            await asyncio.to_thread(write_hostile_file, server.environment["CHAT_RELAY_PATH"])
        else:
            channel = server.destination
            quoted = [f"$hostile${payload}$hostile$" for payload in HOSTILE]
            sql = "".join(f"INSERT INTO asyncmail_relay (channel, payload) VALUES ('{channel}', {row});" for row in quoted)
            sql += "".join(f"SELECT pg_notify('{channel}', {payload});" for payload in quoted)
            await asyncio.to_thread(subprocess.run, ["psql", "-v", "ON_ERROR_STOP=1", "-q", "-c", sql], check=True, capture_output=True)
        await here.send("after the hostile rows, from here")
        await hear_line(there, "after the hostile rows, from here")
        await there.send("after the hostile rows, from there")
        await hear_line(here, "after the hostile rows, from there")
        assert server.process.poll() is None and other.process.poll() is None, "an instance died"
        await here.close()
        await there.close()
        print(f"hostile ({server.engine}): {len(HOSTILE)} hostile rows and wake-ups; both instances still relay")
    finally:
        other.stop()


async def relay(server):
    """Two instances on one PostgreSQL share rooms; a database restart mid-conversation loses nothing."""
    other = Server(**server.environment)
    try:
        here, there = await connected_pair(server, other)
        # Sync lines still on their way are skipped by `hear` below.

        lines = 200
        # With a way to restart the database (CI gives one), it restarts mid-conversation.
        control = os.environ.get("ASYNCMAIL_PG_CONTROL") if server.engine == "postgres" else None

        async def speak(client, tag):
            for number in range(lines):
                await client.send(f"{tag} {number}")
                if number == lines // 2 and tag == "here" and control:
                    # Mid-conversation: the database restarts under both instances.
                    await asyncio.to_thread(subprocess.run, [control, "restart"], check=True, capture_output=True)
                await asyncio.sleep(0.002)

        async def hear(client):
            heard = []
            while len(heard) < 2 * lines:
                line = await asyncio.wait_for(client.recv(), timeout=60)
                if not line.startswith("sync"):
                    heard.append(line)
            return heard

        listeners = [asyncio.create_task(hear(client)) for client in (here, there)]
        await asyncio.gather(speak(here, "here"), speak(there, "there"))
        for heard in await asyncio.gather(*listeners):
            for tag in ("here", "there"):
                own = [line for line in heard if line.startswith(tag + " ")]
                assert own == [f"{tag} {number}" for number in range(lines)], f"{tag}: lost or reordered"
        stats = (await asyncio.to_thread(server.stats), await asyncio.to_thread(other.stats))
        assert stats == ({"subscribers": 1}, {"subscribers": 1}), f"stats are per instance: {stats}"
        await here.close()
        await there.close()
        if server.engine == "sqlite":
            restarted = "through one SQLite file"
        elif control:
            restarted = "with a database restart"
        else:
            restarted = "(without a restart: ASYNCMAIL_PG_CONTROL=Scripts/postgres.sh adds one)"
        print(f"relay ({server.engine}): two instances, {2 * lines} lines each way, nothing lost {restarted}")
    finally:
        other.stop()


async def resume(server):
    """?after=: a start position first, positions with every line, a resume with exactly the missed
    lines then live ones, and one reset frame, with the exact count of the room's own lines, for a
    position past the history (CHAT_HISTORY=10, kept per room); another room's traffic never resets
    it; a client that heard nothing comes back to what was posted meanwhile; ?after=oldest."""

    async def frame(client):
        return json.loads(await asyncio.wait_for(client.recv(), timeout=30))

    async def start(client):
        first = await frame(client)
        assert set(first) == {"start"}, f"the start position first: {first}"
        return first["start"]

    async def said(writer, texts):
        # The writer hears its own lines (plain text): once it has, they are posted.
        for text in texts:
            await writer.send(text)
        for text in texts:
            assert await asyncio.wait_for(writer.recv(), timeout=30) == text

    writer = await connect(server.url("r"))
    busy = await connect(server.url("busy"))
    reader = await connect(server.url("r") + "?after=")
    await start(reader)
    await server.wait_for_subscribers(3, timeout=30)
    await said(writer, [f"l{index}" for index in range(5)])
    first = [await frame(reader) for _ in range(5)]
    assert [line["text"] for line in first] == [f"l{index}" for index in range(5)], first
    sequences = [int(line["position"].rsplit("-", 1)[1]) for line in first]
    assert sequences == list(range(1, 6)), f"the room's own numbers: {first}"
    await reader.close()
    await server.wait_for_subscribers(2, timeout=30)

    await said(writer, ["m0", "m1", "m2"])  # while the reader is away
    await said(busy, [f"b{index}" for index in range(30)])  # another room, three times its history
    back = await connect(server.url("r") + "?after=" + first[-1]["position"])
    assert await start(back) == first[-1]["position"]
    await server.wait_for_subscribers(3, timeout=30)
    await said(writer, ["live", "end"])
    caught_up = [await frame(back) for _ in range(5)]
    assert [line.get("text") for line in caught_up] == ["m0", "m1", "m2", "live", "end"], caught_up
    await back.close()

    # A client that hears nothing in a quiet room, leaves, and comes back with its start.
    quiet = await connect(server.url("quiet") + "?after=")
    quiet_start = await start(quiet)
    assert quiet_start.endswith("-0"), f"nothing posted to the room yet: {quiet_start}"
    await quiet.close()
    quiet_writer = await connect(server.url("quiet"))
    await said(quiet_writer, ["while away"])
    quiet = await connect(server.url("quiet") + "?after=" + quiet_start)
    await start(quiet)
    assert await frame(quiet) == {"position": quiet_start[:-1] + "1", "text": "while away"}
    oldest = await connect(server.url("quiet") + "?after=oldest")
    await start(oldest)
    assert (await frame(oldest))["text"] == "while away", "everything the room keeps"
    for client in (quiet, quiet_writer, oldest):
        await client.close()

    await said(writer, [f"n{index}" for index in range(12)])  # the room's lines 11 to 22; 13 to 22 are kept
    await said(busy, [f"b{index}" for index in range(30, 60)])
    late = await connect(server.url("r") + "?after=" + first[0]["position"])
    await start(late)
    reset = await frame(late)
    assert reset == {"reset": {"missed": 11}}, f"expected the exact count of the room's lines 2 to 12: {reset}"
    kept = [await frame(late) for _ in range(10)]
    assert [line["text"] for line in kept] == [f"n{index}" for index in range(2, 12)], kept
    mangled = await connect(server.url("r") + "?after=not-a-position")
    await start(mangled)
    assert await frame(mangled) == {"reset": {"missed": None}}
    await server.wait_for_subscribers(4, timeout=30)
    await said(writer, ["after"])
    assert (await frame(late))["text"] == "after"
    assert (await frame(mangled))["text"] == "after"
    for client in (writer, busy, late, mangled):
        await client.close()
    await server.wait_for_subscribers(0, timeout=30)
    print(
        "resume: 3 missed lines then live, none twice, beside a busier room; a quiet room's start came back to"
        " its line; a reset of 11, the room's own; a mangled position reset"
    )


async def fleet(server):
    """Two instances on the relay, with fleet-wide positions (CHAT_HISTORY=60): a client reads 20
    lines on this instance and goes; 50 more are posted, half on each instance; it comes back to
    the other instance with its last position and gets exactly those 50, in the room's order, then
    live lines, none twice. A client whose position is past what is kept gets the exact count. A
    client that took its start in an empty room and heard nothing comes back with it to the other
    instance and gets every line posted meanwhile, with no reset."""

    async def frame(client):
        return json.loads(await asyncio.wait_for(client.recv(), timeout=30))

    other = Server(**server.environment)
    try:
        here, there = await connected_pair(server, other)  # both relays listen
        # Two plain clients in the room, one on each instance, and two with positions here.
        # The writers never read what the room says: unbounded, so that their close is not stuck
        # behind unread frames.
        writers = (await connect(server.url("f"), max_queue=None), await connect(other.url("f"), max_queue=None))
        watcher = await connect(server.url("f") + "?after=")  # the room's order, as every instance has it
        reader = await connect(server.url("f") + "?after=")
        for client in (watcher, reader):
            assert set(await frame(client)) == {"start"}
        await server.wait_for_subscribers(4, timeout=30)
        await other.wait_for_subscribers(2, timeout=30)
        for index in range(20):
            await writers[0].send(f"read {index}")
        read = [await frame(reader) for _ in range(20)]
        assert [line["text"] for line in read] == [f"read {index}" for index in range(20)], read
        await reader.close()

        # Half on each instance, and as many to another room, which numbers its own.
        others = (await connect(server.url("g"), max_queue=None), await connect(other.url("g"), max_queue=None))
        for index in range(50):
            await writers[index % 2].send(f"away {index}")
            await others[index % 2].send(f"elsewhere {index}")
        seen = [await frame(watcher) for _ in range(70)][20:]
        assert sorted(line["text"] for line in seen) == sorted(f"away {index}" for index in range(50)), seen

        back = await connect(other.url("f") + "?after=" + read[-1]["position"])
        assert await frame(back) == {"start": read[-1]["position"]}
        await other.wait_for_subscribers(4, timeout=30)  # `there`, the writers and `back`
        await writers[0].send("live")
        caught_up = [await frame(back) for _ in range(51)]
        assert "reset" not in caught_up[0], caught_up[0]
        assert caught_up[:50] == seen, "exactly the 50 missed lines, with the same positions, in the room's order"
        assert caught_up[50]["text"] == "live", caught_up[50]

        # 71 lines so far; the other instance keeps the newest 60: 10 after the first are gone.
        late = await connect(other.url("f") + "?after=" + read[0]["position"])
        assert set(await frame(late)) == {"start"}
        assert await frame(late) == {"reset": {"missed": 10}}, "the exact count of the room's lines 2 to 11"
        kept = [await frame(late) for _ in range(60)]
        assert kept[-51:] == caught_up, "then what is kept, ending with the same lines"
        # The other room kept its own 50 lines, numbered 1 to 50 on both instances.
        for instance in (server, other):
            elsewhere = await connect(instance.url("g") + "?after=oldest")
            assert set(await frame(elsewhere)) == {"start"}
            lines = [await frame(elsewhere) for _ in range(50)]
            assert sorted(line["text"] for line in lines) == sorted(f"elsewhere {index}" for index in range(50))
            assert [int(line["position"].rsplit("-", 1)[1]) for line in lines] == list(range(1, 51)), lines
            await elsewhere.close()
        # A quiet client: it takes its start in a room nothing was posted to, and goes; five lines
        # are posted there on the other instance; it comes back there with its start and gets them.
        quiet = await connect(server.url("q") + "?after=")
        start = (await frame(quiet))["start"]
        await quiet.close()
        quiet_writer = await connect(other.url("q"), max_queue=None)
        for index in range(5):
            await quiet_writer.send(f"quiet {index}")
        returned = await connect(other.url("q") + "?after=" + start)
        # Its start there is the room's beginning, or the same place in the store's numbers once
        # that instance has read the room's first row: either way, no reset before the lines.
        assert set(await frame(returned)) == {"start"}
        lines = [await frame(returned) for _ in range(5)]
        assert [line.get("text") for line in lines] == [f"quiet {index}" for index in range(5)], lines
        for client in (here, there, watcher, back, late, returned, quiet_writer, *writers, *others):
            await client.close()
        print(
            "fleet: 50 lines missed on one instance, resumed on the other exactly, then live; a reset of 10,"
            " the room's own; another room numbered 1 to 50 on both"
        )
    finally:
        other.stop()


def metric(samples, name, **labels):
    """The value of one series; 0 when it was never reported."""
    wanted = frozenset(labels.items())
    return sum(value for (series, pairs), value in samples.items() if series == name and wanted <= pairs)


async def observability(server):
    """Two instances: /metrics counts the lines each one posted, relayed and delivered, and every
    line's trace runs from one instance's WebSocket frame to the other instance's socket write."""
    other = Server(**server.environment)
    try:
        here, there = await connected_pair(server, other)
        channel = server.destination
        line_type = {"messaging_system": "asyncmail", "messaging_destination_name": "ChatServer.ChatLine"}
        relay = {"messaging_system": f"asyncmail-{server.engine}", "messaging_destination_name": channel}

        def counts(instance):
            samples = instance.metrics()
            return {
                "posted": metric(samples, "messaging_client_sent_messages", **line_type),
                "delivered": metric(samples, "messaging_client_consumed_messages", **line_type),
                "relayed": metric(samples, "messaging_client_sent_messages", **relay),
                "received": metric(samples, "messaging_client_consumed_messages", **relay),
                "missing": metric(samples, "asyncmail_relay_missing_messages", **relay),
            }

        # Sync lines may still be on their way: a marker each way, heard on both sides, comes after
        # all of them (a relay delivers each origin's lines in order), so the counts are settled.
        for sender, receiver, marker in ((here, there, "settled here"), (there, here, "settled there")):
            await sender.send(marker)
            await hear_line(receiver, marker)
            await hear_line(sender, marker)
        # The markers' own counts can still be on their way when they are heard: a post's are
        # recorded inside its span (the frame's, or the relay's consumer span), after the socket
        # write, and a relay's `relayed` once the database answers. So the counts are read once
        # no span is open and each relay has published all it queued.
        def settled(instance):
            samples = instance.metrics()
            queued = metric(samples, "asyncmail_relay_queued_messages", **relay)
            return queued == metric(samples, "messaging_client_sent_messages", **relay) and instance.traces()["active"] == 0

        for instance in (server, other):
            await poll(lambda: settled(instance), bool, 30, lambda _: "spans stayed open or a relay kept mail queued")
        before = (await asyncio.to_thread(counts, server), await asyncio.to_thread(counts, other))
        lines = 50
        for number in range(lines):
            await here.send(f"traced {number}")
        for number in range(lines):
            await hear_line(there, f"traced {number}")
        await hear_line(here, f"traced {lines - 1}")  # its own echo: delivered here too
        # Here: posted by this instance's clients, delivered to its one connection, relayed out.
        # There: received by its relay, posted into its mailroom, delivered to its one connection.
        expected = [
            {"posted": lines, "delivered": lines, "relayed": lines, "received": 0, "missing": 0},
            {"posted": lines, "delivered": lines, "relayed": 0, "received": lines, "missing": 0},
        ]
        # The publisher counts a statement once it returns, which can be just after the other side
        # has the line: the counts are read until they match, for up to 30 s (nothing announces them).
        def gains():
            after = (counts(server), counts(other))
            return [{key: after[side][key] - before[side][key] for key in after[side]} for side in (0, 1)]

        await poll(gains, lambda gained: gained == expected, 30, lambda gained: f"gained {gained}, expected {expected}")
        subscriptions = metric(await asyncio.to_thread(other.metrics), "asyncmail_mailroom_subscriptions", **line_type)
        assert subscriptions == 1, f"one connection there, the gauge says {subscriptions}"

        # The traces: here, a frame span per line; there, the relay's consumer span is its child,
        # and the socket write is the consumer span's child, in the same trace.
        def continued_writes():
            frames = {span["spanID"]: span for span in server.traces()["spans"] if span["name"] == "chat frame"}
            spans_there = other.traces()["spans"]
            processed = {
                span["spanID"]: span
                for span in spans_there
                if span["name"] == f"{channel} process" and span["parentSpanID"] in frames
                and frames[span["parentSpanID"]]["traceID"] == span["traceID"]
            }
            return [
                span for span in spans_there
                if span["name"] == "chat write" and span["parentSpanID"] in processed
                and processed[span["parentSpanID"]]["traceID"] == span["traceID"]
            ]

        # Each span ends after what the client saw (a frame's once its post returns, a write's once
        # the socket write returns): they are read until they are all there, for up to 30 s.
        writes = await poll(
            continued_writes,
            lambda writes: len(writes) >= lines,
            30,
            lambda writes: f"{len(writes)} socket writes there continue a frame's trace from here",
        )
        await here.close()
        await there.close()
        print(f"observability: {lines} lines counted on both /metrics; {len(writes)} writes there continue traces from here")
    finally:
        other.stop()


def room_presence(instance, room):
    """`GET /rooms/{room}/presence`: the room's connections, fleet-wide with the relay."""
    with urllib.request.urlopen(f"http://127.0.0.1:{instance.port}/rooms/{room}/presence", timeout=5) as response:
        return json.load(response)["connections"]


async def presence(server):
    """Two instances on the relay: each join and leave, on either, is counted right on both within
    2 s; the instance killed with SIGKILL leaves the other's count within the presence expiry."""
    other = Server(**server.environment)
    try:
        room = "presence_lobby"

        async def both(expected, within):
            for instance in (server, other):
                await poll(
                    lambda: room_presence(instance, room),
                    lambda count: count == expected,
                    within,
                    lambda count: f"port {instance.port} counted {count} connections, expected {expected} within {within} s",
                )

        on_a = [await connect(server.url(room)) for _ in range(3)]
        await both(3, 2)
        on_b = [await connect(other.url(room)) for _ in range(2)]
        await both(5, 2)
        elsewhere = await connect(other.url("presence_kitchen"))
        await both(5, 2)
        assert room_presence(server, "presence_kitchen") in (0, 1) and room_presence(other, "presence_kitchen") == 1
        await on_a.pop().close()
        await on_b.pop().close()
        await both(3, 2)
        on_a.append(await connect(server.url(room)))
        await both(4, 2)

        # B dies holding one connection in the room: A's count drops by one within the expiry.
        expiry = int(server.environment["CHAT_PRESENCE_EXPIRY"])
        killed = time.monotonic()
        other.process.send_signal(signal.SIGKILL)
        other.process.wait()
        await poll(
            lambda: room_presence(server, room),
            lambda count: count == 3,
            expiry + 10,  # a hang guard; the bound is asserted below
            lambda count: f"A still counts {count} after B was killed",
        )
        took = time.monotonic() - killed
        assert took <= expiry, f"B's connection outlived the {expiry} s expiry on A: {took:.1f} s"
        assert room_presence(server, "presence_kitchen") == 0, "B's other room is cleared too"
        for client in on_a:
            await client.close()
        await poll(lambda: room_presence(server, room), lambda count: count == 0, 2, lambda count: f"{count} left")
        print(f"presence: counts right on both within 2 s; a killed instance's connections left after {took:.1f} s (expiry {expiry} s)")
    finally:
        other.stop()


async def memory(server, phases=4, per_phase=10_000, warm_up=2):
    """Connections opened and closed in batches of 100 (half with ?after=, lines flowing), while
    the server's resident memory is read from outside after each phase: it must not keep growing
    with the count of connections served: within 10 MB of its value after the first `warm_up`
    phases, while the allocator's caches fill. The release build's memory climbs for the first
    20,000 connections and then stays flat (47, 54, 55, 55 MB at 10,000 to 40,000 here; with the
    SQLite relay 47, 51, 54, 57 MB at 5,000 to 20,000, then 57 to 59 MB up to 80,000), so the
    first 20,000 are the warm-up and the 20,000 after them are measured."""
    writer = await connect(server.url("m0"), max_queue=None)  # its own lines are never read
    await server.wait_for_subscribers(1, timeout=30)
    readings = []
    served = 0
    for _ in range(phases):
        for batch in range(per_phase // 100):
            clients = await asyncio.gather(
                *(
                    connect(server.url(f"m{index % 4}") + ("?after=" if index % 2 else ""))
                    for index in range(100)
                )
            )
            await writer.send(f"line {served + batch}")
            await asyncio.gather(*(client.close() for client in clients))
        served += per_phase
        await server.wait_for_subscribers(1, timeout=60)
        readings.append(server.rss_kb() // 1024)
        print(f"memory: {served} connections served, RSS {readings[-1]} MB", flush=True)
    await writer.close()
    warmed = warm_up * per_phase
    growth = readings[-1] - readings[warm_up - 1]
    assert growth <= 10, f"RSS grew {growth} MB from {warmed} to {served} connections: {readings}"
    print(f"memory: {served} connections, RSS {readings} MB: {growth} MB after the first {warmed}")


async def memory_relay(server):
    """The same with the relay: every connection also tracks and untracks a presence entry."""
    await memory(server, phases=8, per_phase=5_000, warm_up=4)


RELAY_ENVIRONMENT = {"CHAT_RELAY": "postgres", "CHAT_RELAY_CHANNEL": f"chat_test_{os.getpid()}", "LOG_LEVEL": os.environ.get("CHAT_LOG_LEVEL", "error")}

# An expiry short enough for a test, long enough (five heartbeats of 1 s) for a loaded machine.
PRESENCE_ENVIRONMENT = dict(RELAY_ENVIRONMENT, CHAT_RELAY_CHANNEL=f"chat_presence_{os.getpid()}", CHAT_PRESENCE_EXPIRY=5)

# The embedded relay: one SQLite file per scenario, in a short folder (a wake-up socket's path
# beside it must stay under 104 bytes).
SQLITE_FOLDER = f"/tmp/chat-{os.getpid()}"


def sqlite(name, **extra):
    return dict(
        RELAY_ENVIRONMENT,
        CHAT_RELAY="sqlite",
        CHAT_RELAY_PATH=f"{SQLITE_FOLDER}/{name}.sqlite",
        **extra,
    )


SCENARIOS = {
    "rooms": (rooms, {}),
    "churn": (churn, {}),
    "slow": (slow, {}),
    "slow-drop": (slow_drop, {"SLOW_LIMIT": 1_000}),
    # The stalled client is still there (no eviction), and only the mailroom's close can end it.
    "sigterm": (sigterm, {"SLOW_LIMIT": 1_000_000, "SHUTDOWN_LIMIT": 120}),
    "resume": (resume, {"CHAT_HISTORY": 10}),
    "relay": (relay, RELAY_ENVIRONMENT),  # needs PostgreSQL: PGHOST and friends
    "hostile": (hostile, RELAY_ENVIRONMENT),  # needs PostgreSQL and psql
    "observability": (observability, dict(RELAY_ENVIRONMENT, CHAT_TRACING="memory")),  # needs PostgreSQL
    "fleet": (fleet, dict(RELAY_ENVIRONMENT, CHAT_HISTORY=60)),  # needs PostgreSQL
    "presence": (presence, PRESENCE_ENVIRONMENT),  # needs PostgreSQL
    "memory": (memory, {}),
    "memory-relay": (memory_relay, RELAY_ENVIRONMENT),  # needs PostgreSQL
    # The same scenarios on the embedded relay: no server at all.
    "relay-sqlite": (relay, sqlite("relay")),
    "hostile-sqlite": (hostile, sqlite("hostile")),
    "observability-sqlite": (observability, sqlite("observability", CHAT_TRACING="memory")),
    "fleet-sqlite": (fleet, sqlite("fleet", CHAT_HISTORY=60)),
    "presence-sqlite": (presence, sqlite("presence", CHAT_PRESENCE_EXPIRY=5)),
    "memory-relay-sqlite": (memory_relay, sqlite("memory")),
}


def main():
    chosen = sys.argv[2:] or [
        name
        for name in SCENARIOS
        if name not in ("relay", "hostile", "observability", "fleet", "presence", "memory-relay") or "PGHOST" in os.environ
    ]
    failed = []
    os.makedirs(SQLITE_FOLDER, mode=0o700, exist_ok=True)
    for name in chosen:
        scenario, environment = SCENARIOS[name]
        started = time.monotonic()
        try:
            server = Server(**environment)
            try:
                asyncio.run(asyncio.wait_for(scenario(server), timeout=300))
            finally:
                server.stop()
        except Exception:  # every scenario runs; each failure is named, with its traceback
            traceback.print_exc()
            print(f"scenario {name} FAILED after {time.monotonic() - started:.1f} s", flush=True)
            failed.append(name)
        else:
            print(f"scenario {name} passed after {time.monotonic() - started:.1f} s", flush=True)
    shutil.rmtree(SQLITE_FOLDER, ignore_errors=True)
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
