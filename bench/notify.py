"""Notifications: what sending them costs submissions, and how soon they arrive, on both databases.

* Throughput ratio: solved (inbox) submissions/s of a server with e-mail and
  webhook notifications on ÷ the same shipped app with none configured,
  paired: three servers on one database (on, off, on again), and each
  closed-loop client sends to them in turn, request by request, so all three
  see the same moments of the machine. At equal concurrency submissions/s
  are inversely proportional to the mean latency: a round's ratio is the
  off server's mean latency ÷ the on server's; the figure is the median over
  rounds, after a short warm-up load of each. A/A control: the "on again"
  server ÷ the "on" server. (Loaded one after the other, the same code's
  ratio wandered from run to run as the machine's speed drifted between the
  sides: docs/benchmarks.md, "Figures behind the code".) The SMTP
  sink (aiosmtpd, plain ``smtp://``) and the webhook receiver run in a
  process of their own on loopback, sharing the cores with the servers, as
  a local relay would. The deliveries wait for quiet moments; after each
  round the outbox is left to drain before the next one starts, and how long
  that takes is reported too.
* Submission → delivery: ``delivered_at - created_at`` of the outbox rows of
  a paced run (10 submissions/s), median and p99, per channel.
* Chat: the same ratio with the six chat channels on (Slack, Discord,
  Teams, Telegram, Matrix, ntfy, each a URL of ``SUNDOWN_NOTIFY_URLS`` sent
  to a stand-in of its API on loopback, in the sinks' process) ÷ none; at
  10 submissions/s each chat delivery's delay, and how long after the last
  submission the outbox is empty (≤ 1 s).

Control: ``notify_inline`` (the sends inside the close callback, so the
keep-alive connection waits for them) must fail the throughput ratio, with
e-mail and webhook and with the six chat channels alike.
Every submission carries a proof-of-work solved beforehand (difficulty 1),
on both sides, so the two do the same work but the notifications.
"""

from __future__ import annotations

import http.client
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from datetime import UTC

import altcha
from sqlalchemy import text

from bench.client import Samples
from bench.databases import utcnow
from bench.report import Control
from bench.servers import _wait_listening, serve
from bench.stats import Ratio, ratios
from devtools.pgcluster import free_port
from devtools.realistic import Rows
from devtools.server import ROOT, stop

KINDS = ("sqlite", "postgresql")
CLIENTS = 8
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
QUICK = {"rounds": 3, "control_rounds": 1, "seconds": 1.2, "batch": 250, "paced": 30}
FULL = {"rounds": 5, "control_rounds": 2, "seconds": 5.0, "batch": 1500, "paced": 200}


CHAT = ("slack", "discord", "msteams", "telegram", "matrix", "ntfy")


def run(ctx) -> None:
    """Throughput ratio and delivery times on both databases, e-mail and webhook then chat; the controls."""
    sizes = QUICK if ctx.quick else FULL
    control = Control("notifications sent on the connection", "notify_inline")
    chat_control = Control("chat messages sent on the connection", "notify_inline")
    # A control only has to miss the goal, by far: fewer rounds.
    control_sizes = {**sizes, "rounds": sizes["control_rounds"]}
    with sinks(ctx) as (sink, chat):
        for kind in KINDS:
            database = ctx.database(kind, "notify")
            database.set_last_cleanup(utcnow())  # no cleanup due: notifications are the only difference
            throughput(ctx, database, sizes, sink)
            delivery_times(ctx, database, sizes, sink)
            control.figures.append(throughput(ctx, database, control_sizes, sink, variant="notify_inline"))
            throughput(ctx, database, sizes, chat, scenario="chat")
            delivery_times(ctx, database, sizes, chat, channels=CHAT)
            chat_control.figures.append(
                throughput(ctx, database, control_sizes, chat, variant="notify_inline", scenario="chat")
            )
            database.drop()
    ctx.report.control(control)
    ctx.report.control(chat_control)


def chat_settings(api_port: int) -> dict:
    """The six chat channels' URLs, each to the stand-in on ``api_port``: Matrix and ntfy name it, the other
    four reach it through ``SUNDOWN_NOTIFY_API_BASES``."""
    base = f"http://127.0.0.1:{api_port}"
    urls = [
        "slack://T0001/B0002/SlackBenchToken1",
        "discord://112233/DiscordBenchToken1",
        "workflows://prod.example.logic.azure.com/wf42/TeamsBenchSignature",
        "tgram://123456:TelegramBenchToken/-100777",
        f"matrix://syt_MatrixBenchToken@127.0.0.1:{api_port}/!room:example.org",
        f"ntfy://127.0.0.1:{api_port}/sundown-bench",
    ]
    return {
        "notify_urls": ",".join(urls),
        "notify_api_bases": ",".join(f"{service}={base}" for service in ("slack", "discord", "msteams", "telegram")),
        "webhook_allow_private": 1,
        "pow_max_number": 1,
    }


@contextmanager
def sinks(ctx):
    """The SMTP sink, the webhook receiver and the chat services' stand-in in a process of their own; yield
    the servers' settings for e-mail and webhook, and for the six chat channels."""
    mail_port, hook_port, api_port = free_port(), free_port(), free_port()
    with open(ctx.workdir / "sinks.log", "ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "devtools.receivers", str(mail_port), str(hook_port), SECRET, str(api_port)],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait_listening(mail_port, process, ctx.workdir / "sinks.log")
        _wait_listening(hook_port, process, ctx.workdir / "sinks.log")
        _wait_listening(api_port, process, ctx.workdir / "sinks.log")
        yield (
            {
                "smtp_url": f"smtp://127.0.0.1:{mail_port}",
                "mail_from": "sundown@example.org",
                "notify_emails": "admin@example.org",
                "webhook_url": f"http://127.0.0.1:{hook_port}/hooks/sundown",
                "webhook_secret": SECRET,
                "webhook_allow_private": 1,
                "pow_max_number": 1,
            },
            chat_settings(api_port),
        )
    finally:
        stop(process)


def throughput(ctx, database, sizes, on_settings: dict, variant: str = "shipped", scenario: str = ""):
    """On ÷ off, paired request by request (and on ÷ on again, the A/A control); the figure. ``scenario``
    ``chat``: the six chat channels on, the figures named ``notify_chat_…``."""
    prefix = f"notify_{scenario}" if scenario else "notify"
    what = "the six chat channels" if scenario else "e-mail + webhook"
    names = ["on", "off", "on_again"]
    means: dict[str, list[float]] = {name: [] for name in names}
    drains: list[float] = []
    on_requests, off_requests = Samples(), Samples()
    kind = database.kind
    with ExitStack() as stack:
        servers = {
            "on": stack.enter_context(
                serve(database.url, ctx.workdir, f"{prefix}-on-{kind}-{variant}", variant, **on_settings)
            ),
            "off": stack.enter_context(
                serve(database.url, ctx.workdir, f"{prefix}-off-{kind}-{variant}", pow_max_number=1)
            ),
            "on_again": stack.enter_context(
                serve(database.url, ctx.workdir, f"{prefix}-on2-{kind}-{variant}", variant, **on_settings)
            ),
        }
        ports = [servers[name].port for name in names]
        for port in ports:
            warm_up(port, database.engine)
        cpu = CpuUse()
        for _round in range(sizes["rounds"]):
            bodies = {port: solved_bodies(port, sizes["batch"]) for port in ports}
            with cpu.measure(servers):
                by_port = paired_loop(ports, bodies, sizes["seconds"])
            for name, port in zip(names, ports, strict=False):
                means[name].append(statistics.mean(by_port[port].latencies))
                cpu.requests[name] += len(by_port[port].latencies)
            on_requests.extend(by_port[servers["on"].port])
            off_requests.extend(by_port[servers["off"].port])
            drains.append(drain(database.engine))
    # At equal concurrency, submissions per second are inversely proportional to the mean latency.
    ratio = Ratio(ratios(means["off"], means["on"]), ratios(means["on_again"], means["on"]))
    control = variant != "shipped"
    figure = ctx.report.add(
        f"{prefix}_throughput_ratio",
        ratio.value,
        "≥ 0.95",
        kind,
        f"solved submissions/s, {what} on ÷ none configured, paired request by request; {CLIENTS} "
        f"keep-alive clients, {sizes['seconds']:g} s per round",
        samples=f"{sizes['rounds']} rounds",
        ratio=ratio,
        variant=variant if control else "",
    )
    if not control:
        ctx.report.add(
            f"{prefix}_on_submissions_per_s",
            on_requests.rate(),
            "",
            kind,
            "the on server's share of the paired load",
            samples=f"{sizes['rounds']} rounds",
        )
        ctx.report.add(
            f"{prefix}_on_p99_ms",
            on_requests.percentile(0.99) * 1000,
            "",
            kind,
            samples=f"{len(on_requests.latencies)} requests, {on_requests.above(0.99)} above p99",
        )
        ctx.report.add(
            f"{prefix}_off_p99_ms",
            off_requests.percentile(0.99) * 1000,
            "",
            kind,
            samples=f"{len(off_requests.latencies)} requests, {off_requests.above(0.99)} above p99",
        )
        ctx.report.add(
            f"{prefix}_on_cpu_ms_per_submission",
            cpu.per_request("on"),
            "",
            kind,
            f"CPU time of the on server's processes per submission during the rounds, vs "
            f"{cpu.per_request('off'):.2f} ms for the off server; the machine's CPUs were busy "
            f"{cpu.busy():.0%} of the rounds (every process: the servers, the clients, the sinks, "
            f"other work)",
            samples=f"{sizes['rounds']} rounds",
        )
        ctx.report.add(
            f"{prefix}_drain_seconds",
            max(drains),
            "",
            kind,
            f"longest wait after a {sizes['seconds']:g} s round until the outbox was empty",
            samples=f"{len(drains)} rounds",
        )
    return figure


class CpuUse:
    """CPU seconds each server's processes (master and workers, from /proc) and the whole machine
    (/proc/stat) spent while the rounds' load ran: what the notifications cost, and whether the CPUs
    were the resource that ran out."""

    TICK = os.sysconf("SC_CLK_TCK")

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self.requests: dict[str, int] = {"on": 0, "off": 0, "on_again": 0}
        self.machine = [0, 0]  # busy and total ticks

    @contextmanager
    def measure(self, servers: dict):
        before = {name: self._process_seconds(server) for name, server in servers.items()}
        machine = self._machine_ticks()
        yield
        for name, server in servers.items():
            self.seconds[name] = self.seconds.get(name, 0.0) + self._process_seconds(server) - before[name]
        busy, total = self._machine_ticks()
        self.machine = [self.machine[0] + busy - machine[0], self.machine[1] + total - machine[1]]

    def per_request(self, name: str) -> float:
        """Milliseconds of CPU per submission the ``name`` server answered."""
        return 1000 * self.seconds.get(name, 0.0) / max(self.requests[name], 1)

    def busy(self) -> float:
        return self.machine[0] / max(self.machine[1], 1)

    def _process_seconds(self, server) -> float:
        total = 0
        for pid in [server.pid, *server.workers()]:
            try:
                fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()  # noqa: SIM115
            except OSError:
                continue
            total += int(fields[11]) + int(fields[12])  # utime, stime
        return total / self.TICK

    @staticmethod
    def _machine_ticks() -> tuple[int, int]:
        with open("/proc/stat") as stat:
            values = [int(v) for v in stat.readline().split()[1:]]
        idle = values[3] + values[4]  # idle, iowait
        return sum(values) - idle, sum(values)


def warm_up(port: int, engine) -> None:
    """A short load, its outbox drained: pools, caches and lazy imports are ready before the rounds."""
    closed_loop(port, solved_bodies(port, 4 * CLIENTS), seconds=5.0)
    drain(engine)


def drain(engine, timeout: float = 300) -> float:
    """Wait until no delivery is pending; the seconds it took."""
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        with engine.connect() as connection:
            if not connection.scalar(text("SELECT count(*) FROM deliveries WHERE status = 'pending'")):
                break
        time.sleep(0.1)
    return time.perf_counter() - started


def delivery_times(ctx, database, sizes, on_settings: dict, channels: tuple[str, ...] = ("email", "webhook")) -> None:
    """Paced submissions to an "on" server; submission → delivery per channel, from the outbox rows; with chat,
    how long after the last submission the outbox is empty."""
    engine = database.engine
    with engine.connect() as connection:
        first = connection.scalar(text("SELECT coalesce(max(id), 0) FROM deliveries"))
    name = "chat" if channels != ("email", "webhook") else "notify"
    with serve(database.url, ctx.workdir, f"{name}-paced-{database.kind}", **on_settings) as server:
        bodies = solved_bodies(server.port, sizes["paced"])
        paced(server.port, bodies, per_second=10)
        drained = drain(engine, timeout=60)
        rows = wait_delivered(engine, first, len(channels) * sizes["paced"])
    if name == "chat":
        ctx.report.add(
            "notify_chat_drained_after_s",
            drained,
            "≤ 1",
            database.kind,
            "from the last of the paced submissions (10/s, six chat channels) until no delivery is pending",
            samples=f"{len(rows)} deliveries",
        )
    for channel in channels:
        seconds = sorted(delay for each, delay in rows if each == channel)
        samples = Samples(latencies=seconds)
        # A steady trickle is not a burst: its notifications must not wait for the pass's QUIET_WAIT.
        ctx.report.add(
            f"notify_{channel}_delivery_median_ms",
            samples.percentile(0.5) * 1000,
            "≤ 1000",
            database.kind,
            "outbox delivered_at - created_at, 10 submissions/s",
            samples=f"{len(seconds)} deliveries",
        )
        ctx.report.add(
            f"notify_{channel}_delivery_p99_ms",
            samples.percentile(0.99) * 1000,
            "",
            database.kind,
            samples=f"{len(seconds)} deliveries, {samples.above(0.99)} above p99",
        )


def wait_delivered(engine, after_id: int, count: int, timeout: float = 120) -> list[tuple[str, float]]:
    """Wait until ``count`` outbox rows after ``after_id`` are done; (channel, seconds to delivery) each."""
    deadline = time.monotonic() + timeout
    while True:
        with engine.connect() as connection:
            rows = connection.execute(
                text("SELECT channel, created_at, delivered_at FROM deliveries WHERE id > :first AND status = 'done'"),
                {"first": after_id},
            ).all()
        if len(rows) >= count or time.monotonic() > deadline:
            return [(channel, _seconds(delivered) - _seconds(created)) for channel, created, delivered in rows]
        time.sleep(0.2)


def _seconds(value) -> float:
    """A stored timestamp (PostgreSQL: aware datetime; SQLite: naive UTC text) as epoch seconds."""
    from datetime import datetime

    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


_rows = Rows(seed=11)


def solved_bodies(port: int, count: int) -> list[bytes]:
    """``count`` realistic JSON inquiries, each with a fresh challenge from ``port`` solved."""
    contents = [_rows.submission() for _ in range(count)]  # made here: the generator is not shared by threads

    def make(content: dict) -> bytes:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            connection.request("GET", "/api/challenge", headers={"Host": "localhost"})
            challenge = altcha.Challenge.from_dict(json.loads(connection.getresponse().read()))
        finally:
            connection.close()
        solution = altcha.Payload(challenge, altcha.solve_challenge(challenge)).to_base64()
        return json.dumps({**content, "altcha": solution}).encode()

    with ThreadPoolExecutor(4) as pool:
        return list(pool.map(make, contents))


def closed_loop(port: int, bodies: list[bytes], seconds: float) -> Samples:
    """``CLIENTS`` keep-alive clients send ``bodies`` back to back until they run out or ``seconds`` pass."""
    lock, parts = threading.Lock(), [Samples() for _ in range(CLIENTS)]
    remaining = list(bodies)
    deadline = time.perf_counter() + seconds

    def client(samples: Samples) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            while time.perf_counter() < deadline:
                with lock:
                    if not remaining:
                        return
                    body = remaining.pop()
                samples.add(time.time(), *_post(connection, body))
        finally:
            connection.close()

    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(part,)) for part in parts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    total = Samples(elapsed=time.perf_counter() - started)
    for part in parts:
        total.extend(part)
    total.elapsed = time.perf_counter() - started
    return total


def paired_loop(ports: list[int], bodies: dict[int, list[bytes]], seconds: float) -> dict[int, Samples]:
    """``CLIENTS`` keep-alive clients, each sending to ``ports`` in turn request by request (client ``i``
    starting at port ``i``), until ``seconds`` pass or a port's ``bodies`` run out; the samples per port.

    Every server sees the same moments of the machine, so a drift in its
    speed (other work, the CPU's clock) falls on all of them alike.
    """
    lock = threading.Lock()
    remaining = {port: list(each) for port, each in bodies.items()}
    parts = [{port: Samples() for port in ports} for _ in range(CLIENTS)]
    deadline = time.perf_counter() + seconds

    def client(index: int) -> None:
        connections = {port: http.client.HTTPConnection("127.0.0.1", port, timeout=30) for port in ports}
        try:
            turn = index
            while time.perf_counter() < deadline:
                port = ports[turn % len(ports)]
                turn += 1
                with lock:
                    if not remaining[port]:
                        return
                    body = remaining[port].pop()
                parts[index][port].add(time.time(), *_post(connections[port], body))
        finally:
            for connection in connections.values():
                connection.close()

    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(index,)) for index in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    merged = {port: Samples(elapsed=elapsed) for port in ports}
    for part in parts:
        for port, samples in part.items():
            merged[port].latencies += samples.latencies
            merged[port].started += samples.started
            merged[port].statuses += samples.statuses
    return merged


def paced(port: int, bodies: list[bytes], per_second: float) -> None:
    """Send ``bodies`` one by one at ``per_second`` on one keep-alive connection."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        start = time.perf_counter()
        for index, body in enumerate(bodies):
            time.sleep(max(0.0, start + index / per_second - time.perf_counter()))
            _post(connection, body)
    finally:
        connection.close()


def _post(connection: http.client.HTTPConnection, body: bytes) -> tuple[int, float]:
    started = time.perf_counter()
    connection.request(
        "POST", "/api/inquiries", body=body, headers={"Host": "localhost", "Content-Type": "application/json"}
    )
    response = connection.getresponse()
    response.read()
    return response.status, time.perf_counter() - started
