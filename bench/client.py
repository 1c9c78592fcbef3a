"""Load generation from the benchmark process: keep-alive threads and one asyncio burst.

Everything talks to 127.0.0.1 only, and every loop is bounded in time or count.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import threading
import time
from dataclasses import dataclass, field
from itertools import count
from urllib.parse import urlsplit

_sequence = count()


def port_of(base_url: str) -> int:
    """The TCP port of a server's base URL (the host is always 127.0.0.1)."""
    return urlsplit(base_url).port


def inquiry_body() -> bytes:
    """A valid, unique JSON inquiry."""
    n = next(_sequence)
    return json.dumps(
        {"name": f"Load {n}", "email": f"load{n}@example.com", "message": f"Benchmark message {n}."}
    ).encode()


JSON_HEADERS = {"Content-Type": "application/json"}


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
        """POST one JSON inquiry."""
        return self.request("POST", "/api/inquiries", inquiry_body(), JSON_HEADERS)

    def close(self) -> None:
        """Close the socket."""
        self.http.close()


@dataclass
class Samples:
    """Latencies (seconds) and statuses of requests, with when each started (epoch seconds)."""

    latencies: list[float] = field(default_factory=list)
    started: list[float] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    elapsed: float = 0.0

    def add(self, started: float, status: int, latency: float) -> None:
        self.started.append(started)
        self.statuses.append(status)
        self.latencies.append(latency)

    def extend(self, other: "Samples") -> None:
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

    def between(self, start: float, end: float) -> "Samples":
        """The requests that started within [start, end)."""
        picked = Samples(elapsed=end - start)
        for t, s, lat in zip(self.started, self.statuses, self.latencies):
            if start <= t < end:
                picked.add(t, s, lat)
        return picked


def closed_loop(port: int, threads: int, seconds: float) -> Samples:
    """``threads`` clients submit back to back for ``seconds``; return all samples."""
    results = [Samples() for _ in range(threads)]
    deadline = time.perf_counter() + seconds

    def run(samples: Samples) -> None:
        connection = Connection(port)
        while time.perf_counter() < deadline:
            started = time.time()
            status, latency = connection.submit()
            samples.add(started, status, latency)
        connection.close()

    started = time.perf_counter()
    workers = [threading.Thread(target=run, args=(s,)) for s in results]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    total = Samples()
    for samples in results:
        total.extend(samples)
    total.elapsed = time.perf_counter() - started
    return total


class PacedSubmitter:
    """Live traffic: ``threads`` clients each submit, then pause ``interval`` s, until stopped.

    Without ``keepalive`` each submission opens its own connection, as a
    reverse proxy that does not pool upstream connections does.
    """

    def __init__(self, port: int, threads: int = 2, interval: float = 0.01, limit_seconds: float = 900,
                 keepalive: bool = True):
        self.port = port
        self.keepalive = keepalive
        self.interval = interval
        self.samples = [Samples() for _ in range(threads)]
        self.stop_event = threading.Event()
        self.deadline = time.perf_counter() + limit_seconds
        self.threads = [threading.Thread(target=self._run, args=(s,)) for s in self.samples]

    def _run(self, samples: Samples) -> None:
        connection = Connection(self.port)
        while not self.stop_event.is_set() and time.perf_counter() < self.deadline:
            started = time.time()
            status, latency = connection.submit()
            samples.add(started, status, latency)
            if not self.keepalive:
                connection.close()
            self.stop_event.wait(self.interval)
        connection.close()

    def __enter__(self) -> "PacedSubmitter":
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self.stop_event.set()
        for thread in self.threads:
            thread.join()

    def collected(self) -> Samples:
        """All samples so far, merged (call after exit)."""
        total = Samples()
        for samples in self.samples:
            total.extend(samples)
        return total


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
        body = inquiry_body()
        payload = (
            b"POST /api/inquiries HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
        )
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


def submit_count(port: int, total: int, threads: int = 4) -> Samples:
    """Exactly ``total`` submissions from ``threads`` keep-alive clients."""
    per_thread = [total // threads + (1 if i < total % threads else 0) for i in range(threads)]
    results = [Samples() for _ in range(threads)]

    def run(samples: Samples, n: int) -> None:
        connection = Connection(port)
        for _ in range(n):
            started = time.time()
            status, latency = connection.submit()
            samples.add(started, status, latency)
        connection.close()

    workers = [threading.Thread(target=run, args=(s, n)) for s, n in zip(results, per_thread)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    total_samples = Samples()
    for samples in results:
        total_samples.extend(samples)
    return total_samples
