"""Load generation from the benchmark process: keep-alive clients, an open-loop schedule, a burst.

Everything talks to 127.0.0.1 only, and every loop is bounded in time or
count. Submissions are realistic (``devtools.realistic``): a real-looking
name and address, a 200–5000-character message, a browser's user agent.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import queue
import random
import threading
import time
from dataclasses import dataclass, field
from itertools import count
from urllib.parse import urlsplit

from devtools.realistic import Rows

POOL = 2048  # distinct bodies, made once and cycled: the client's CPU goes to sending, not to making text
_rows = Rows(seed=7)
_BODIES = [json.dumps(_rows.submission()).encode() for _ in range(POOL)]
_AGENTS = [_rows.agent() for _ in range(POOL)]
_next = count()


def port_of(base_url: str) -> int:
    """The TCP port of a server's base URL (the host is always 127.0.0.1)."""
    return urlsplit(base_url).port


def submission() -> tuple[bytes, dict[str, str]]:
    """A realistic JSON inquiry and its headers."""
    n = next(_next) % POOL
    return _BODIES[n], {"Content-Type": "application/json", "User-Agent": _AGENTS[n]}


class Connection:
    """One keep-alive HTTP/1.1 connection to 127.0.0.1:port, reopened after errors."""

    def __init__(self, port: int, timeout: float = 30):
        self.port = port
        self.timeout = timeout
        self.http = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)

    def request(self, method: str, path: str, body: bytes | None = None, headers=None) -> tuple[int, float]:
        """Send one request, read the whole response; return (status, seconds). Status 0 = failed."""
        started = time.perf_counter()
        try:
            self.http.request(method, path, body=body, headers={"Host": "localhost", **(headers or {})})
            response = self.http.getresponse()
            response.read()
            status = response.status
        except (OSError, http.client.HTTPException):
            self.http.close()
            self.http = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            status = 0
        return status, time.perf_counter() - started

    def submit(self) -> tuple[int, float]:
        """POST one realistic JSON inquiry."""
        body, headers = submission()
        return self.request("POST", "/api/inquiries", body, headers)

    def get_json(self, path: str) -> dict:
        """GET ``path`` and decode its JSON body."""
        self.http.request("GET", path, headers={"Host": "localhost"})
        return json.loads(self.http.getresponse().read())

    def close(self) -> None:
        """Close the socket."""
        self.http.close()


@dataclass
class Samples:
    """Latencies (seconds) and statuses of requests, with when each was due to start (epoch seconds)."""

    latencies: list[float] = field(default_factory=list)
    started: list[float] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    elapsed: float = 0.0

    def add(self, started: float, status: int, latency: float) -> None:
        self.started.append(started)
        self.statuses.append(status)
        self.latencies.append(latency)

    def extend(self, other: Samples) -> None:
        self.latencies += other.latencies
        self.started += other.started
        self.statuses += other.statuses
        self.elapsed += other.elapsed

    @property
    def ok(self) -> int:
        return sum(1 for s in self.statuses if 200 <= s < 300)

    @property
    def failed(self) -> int:
        return len(self.statuses) - self.ok

    def rate(self) -> float:
        """Successful requests per second."""
        return self.ok / self.elapsed if self.elapsed else 0.0

    def percentile(self, q: float) -> float:
        """The q-quantile latency (0 < q <= 1), nearest rank."""
        ordered = sorted(self.latencies)
        if not ordered:
            return float("nan")
        return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]

    def above(self, q: float) -> int:
        """How many requests took longer than the q-quantile: what that quantile rests on."""
        threshold = self.percentile(q)
        return sum(1 for latency in self.latencies if latency > threshold)

    def longest(self) -> float:
        """The longest latency (0 when empty)."""
        return max(self.latencies, default=0.0)

    def ending(self, before: float | None = None, after: float | None = None) -> Samples:
        """The requests that ended before ``before`` and after ``after`` (each when given)."""
        picked = Samples(elapsed=self.elapsed)
        for t, s, lat in zip(self.started, self.statuses, self.latencies, strict=False):
            if (before is None or t + lat < before) and (after is None or t + lat >= after):
                picked.add(t, s, lat)
        return picked

    def between(self, start: float, end: float) -> Samples:
        """The requests due to start within [start, end)."""
        picked = Samples(elapsed=end - start)
        for t, s, lat in zip(self.started, self.statuses, self.latencies, strict=False):
            if start <= t < end:
                picked.add(t, s, lat)
        return picked


def _merge(parts: list[Samples], elapsed: float) -> Samples:
    total = Samples()
    for samples in parts:
        total.extend(samples)
    total.elapsed = elapsed
    return total


def _run_threads(target, args_list: list[tuple]) -> float:
    """Run ``target(*args)`` in one thread per entry; return the wall-clock seconds."""
    started = time.perf_counter()
    threads = [threading.Thread(target=target, args=args) for args in args_list]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started


def closed_loop(port: int, threads: int, seconds: float) -> Samples:
    """``threads`` keep-alive clients submit back to back for ``seconds`` (a throughput load)."""
    results = [Samples() for _ in range(threads)]
    deadline = time.perf_counter() + seconds

    def run(samples: Samples) -> None:
        connection = Connection(port)
        while time.perf_counter() < deadline:
            started = time.time()
            status, latency = connection.submit()
            samples.add(started, status, latency)
        connection.close()

    return _merge(results, _run_threads(run, [(s,) for s in results]))


def submit_count(port: int, total: int, threads: int = 4) -> Samples:
    """Exactly ``total`` submissions from ``threads`` keep-alive clients."""
    shares = [total // threads + (1 if i < total % threads else 0) for i in range(threads)]
    results = [Samples() for _ in range(threads)]

    def run(samples: Samples, n: int) -> None:
        connection = Connection(port)
        for _ in range(n):
            started = time.time()
            status, latency = connection.submit()
            samples.add(started, status, latency)
        connection.close()

    return _merge(results, _run_threads(run, list(zip(results, shares, strict=False))))


class OpenLoop:
    """Submissions on a fixed Poisson schedule at ``rate`` per second, until the block ends.

    A dispatcher releases each request at its scheduled time to a pool of
    ``senders``; each request's latency counts from its scheduled time, so a
    stall delays every request due meanwhile and each of them is counted
    (no coordinated omission). Each submission opens its own connection, as
    behind a reverse proxy that does not keep upstream connections alive.
    """

    def __init__(self, port: int, rate: float, senders: int = 24, seed: int = 1, limit_seconds: float = 1800):
        self.port = port
        self.rate = rate
        self.random = random.Random(seed)
        self.due: queue.Queue = queue.Queue()
        self.stop_event = threading.Event()
        self.deadline = time.perf_counter() + limit_seconds
        self.parts = [Samples() for _ in range(senders)]
        self.threads = [threading.Thread(target=self._dispatch)]
        self.threads += [threading.Thread(target=self._send, args=(s,)) for s in self.parts]

    def _dispatch(self) -> None:
        offset = time.time() - time.perf_counter()  # scheduled times are reported as epoch seconds
        scheduled = time.perf_counter()
        while not self.stop_event.is_set() and scheduled < self.deadline:
            scheduled += self.random.expovariate(self.rate)
            self.stop_event.wait(max(0.0, scheduled - time.perf_counter()))
            self.due.put((scheduled, offset))
        for _ in self.parts:
            self.due.put(None)

    def _send(self, samples: Samples) -> None:
        while (item := self.due.get()) is not None:
            scheduled, offset = item
            connection = Connection(self.port)
            status, _ = connection.submit()
            connection.close()
            samples.add(scheduled + offset, status, time.perf_counter() - scheduled)

    def __enter__(self) -> OpenLoop:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self.stop_event.set()
        for thread in self.threads:
            thread.join()

    def collected(self) -> Samples:
        """All samples, merged (call after the block)."""
        return _merge(self.parts, 0.0)


async def _send_one(port: int, payload: bytes, go: asyncio.Event, ready: list) -> int:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    ready.append(1)
    await go.wait()
    writer.write(payload)
    await writer.drain()
    status = int((await reader.readline()).split()[1])
    length = 0
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    await reader.readexactly(length)
    writer.close()
    return status


async def _burst(ports: list[int], total: int, timeout: float) -> list[int]:
    go = asyncio.Event()
    ready: list = []
    tasks = []
    for i in range(total):
        body, headers = submission()
        head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        payload = (
            f"POST /api/inquiries HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n{head}"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode() + body
        tasks.append(asyncio.create_task(_send_one(ports[i % len(ports)], payload, go, ready)))
    while len(ready) < total and not any(t.done() for t in tasks):
        await asyncio.sleep(0.01)
    go.set()
    results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), timeout)
    return [r if isinstance(r, int) else 0 for r in results]


def burst_submissions(ports: list[int], total: int = 500, timeout: float = 60) -> list[int]:
    """Open ``total`` connections spread over ``ports``, then send one inquiry on each at once.

    Returns the statuses (0 for a failed connection).
    """
    return asyncio.run(_burst(ports, total, timeout))


def warm_every_worker(port: int, clients: int = 16, bursts: int = 3, seconds: float = 0.2) -> None:
    """Reach every worker: new connections land on whichever accepts first, so a few bursts of many do.

    Each worker's first requests also teach it when the claim is next due.
    """
    for _ in range(bursts):
        closed_loop(port, clients, seconds)
