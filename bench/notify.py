"""Notifications: what sending them costs submissions, and how soon they arrive, on both databases.

* Throughput ratio: solved (inbox) submissions/s of a server with e-mail and
  webhook notifications on ÷ the same shipped app with none configured,
  paired: three servers on one database (on, off, on again), and each
  closed-loop client sends to them in turn, two requests back to back to
  each (the second waits for whatever the server still does on the
  connection after the first answer), so all three see the same moments of
  the machine. At equal concurrency submissions/s are inversely
  proportional to the mean latency: a round's ratio is the off server's
  mean latency ÷ the on server's; the figure is the median over rounds,
  after a short warm-up load of each. A/A control: the "on again" server ÷
  the "on" server. (Loaded one after the other, the same code's ratio
  wandered from run to run as the machine's speed drifted between the
  sides: docs/benchmarks.md, "Figures behind the code".) The SMTP sink
  (aiosmtpd, plain ``smtp://``) and the webhook receiver run in a process of
  their own on loopback, sharing the cores with the servers, as a local
  relay would. The deliveries wait for quiet moments; after each round the
  outbox is left to drain before the next one starts, and how long that
  takes is reported too. Beside the ratio, where the time went, on and off:
  CPU, statements, write transactions (milliseconds held, rows changed:
  ``bench.txlog``) per submission, and on PostgreSQL the share of backends
  waiting for a row lock.
* Submission → delivery: ``delivered_at - created_at`` of the outbox rows of
  a paced run (10 submissions/s), median and p99, per channel.
* Chat: the same ratio with the six chat channels on (Slack, Discord,
  Teams, Telegram, Matrix, ntfy, each a URL of ``SUNDOWN_NOTIFY_URLS`` sent
  to a stand-in of its API on loopback, in the sinks' process) ÷ none; at
  10 submissions/s each chat delivery's delay, and how long after the last
  submission's answer the last chat message reached the stand-in (≤ 1 s),
  with how much of the time the machine's CPUs were contended: the sends
  wait for a quiet machine, up to ``QUIET_WAIT`` a pass, by design; a second
  figure starts at the end of the sends' last long wait for the machine
  (``bench.wsgi`` times them), the outbox's own work.

Control: ``notify_inline`` (the sends inside the close callback, so the
keep-alive connection waits for them) must fail the throughput ratio, with
e-mail and webhook and with the six chat channels alike: one control per
scenario and database, each caught only by its own figure.
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
from functools import partial

import altcha
from sqlalchemy import text

from app.core.background import CPU_BUSY_SHARE, CPU_PRESSURE, STOP_CHECK
from app.outbox.hook import QUIET_WAIT
from bench.client import Samples
from bench.context import machine_ticks
from bench.databases import utcnow
from bench.report import Control
from bench.servers import _wait_listening, serve
from bench.stats import Ratio, ratios
from devtools.pgcluster import free_port
from devtools.realistic import Rows
from devtools.server import ROOT, stop

KINDS = ("sqlite", "postgresql")
CLIENTS = 8
IN_A_ROW = 2  # requests a client sends to one server, back to back on its connection, before the next server
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
QUICK = {"rounds": 3, "seconds": 1.2, "batch": 250, "paced": 30}
# batch: bodies solved per server before each round, each a challenge fetched and solved (1.8 s per 1,200 here):
# a 4 s round takes about 220 per server (55 submissions/s), and a server that runs out ends the round.
FULL = {"rounds": 4, "seconds": 4.0, "batch": 500, "paced": 100}


CHAT = ("slack", "discord", "msteams", "telegram", "matrix", "ntfy")


def run(ctx) -> None:
    """Throughput ratio and delivery times on both databases, e-mail and webhook then chat; the controls, one
    per scenario and database, each caught only by its own figure."""
    sizes = QUICK if ctx.quick else FULL
    # A control only has to miss the goal, by far (0.42-0.52 in every full run): one round.
    control_sizes = {**sizes, "rounds": 1}
    with sinks(ctx) as (sink, chat, api_port):
        for kind in KINDS:
            database = ctx.database(kind, "notify")
            database.set_last_cleanup(utcnow())  # no cleanup due: notifications are the only difference
            for settings, scenario, what in ((sink, "", "notifications"), (chat, "chat", "chat messages")):
                throughput(ctx, database, sizes, settings, scenario=scenario)
                delivery_times(ctx, database, sizes, settings, api_port if scenario else None)
                control = Control(f"{what} sent on the connection ({kind})", "notify_inline")
                control.figures.append(
                    throughput(ctx, database, control_sizes, settings, variant="notify_inline", scenario=scenario)
                )
                if ctx.quick:  # 1.2 s rounds: an A/A of one server against its twin strays by up to 0.6 there
                    print(f"# control {control.name}: not judged in quick mode (judged at the full sizes)", flush=True)
                else:
                    ctx.report.control(control)
            database.drop()


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
    the servers' settings for e-mail and webhook and for the six chat channels, and the stand-in's port."""
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
            api_port,
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
    samples = {name: Samples() for name in names}
    kind = database.kind
    folders = {name: ctx.workdir / f"{prefix}-writes-{name}-{kind}-{variant}" for name in names}
    with ExitStack() as stack:
        servers = {}
        for name in names:
            folders[name].mkdir(exist_ok=True)
            settings = on_settings if name != "off" else {"pow_max_number": 1}
            label = f"{prefix}-{name}-{kind}-{variant}"
            servers[name] = stack.enter_context(
                serve(
                    database.url,
                    ctx.workdir,
                    label,
                    variant if name != "off" else "shipped",
                    log_writes=folders[name],
                    **settings,
                )
            )
        ports = [servers[name].port for name in names]
        for port in ports:
            warm_up(port, database.engine)
        cpu, db_work = CpuUse(), DatabaseWork(servers, folders)
        for _round in range(sizes["rounds"]):
            bodies = {port: solved_bodies(port, sizes["batch"]) for port in ports}
            with cpu.measure(servers), db_work.measure(database):
                by_port = paired_loop(ports, bodies, sizes["seconds"])
            drains.append(drain(database.engine))
            for name, port in zip(names, ports, strict=True):
                means[name].append(statistics.mean(by_port[port].latencies))
                cpu.requests[name] += len(by_port[port].latencies)
                samples[name].extend(by_port[port])
    # At equal concurrency, submissions per second are inversely proportional to the mean latency.
    ratio = Ratio(ratios(means["off"], means["on"]), ratios(means["on_again"], means["on"]))
    control = variant != "shipped"
    figure = ctx.report.add(
        f"{prefix}_throughput_ratio",
        ratio.value,
        "≥ 0.95",
        kind,
        f"solved submissions/s, {what} on ÷ none configured, paired {IN_A_ROW} requests at a time; {CLIENTS} "
        f"keep-alive clients, {sizes['seconds']:g} s per round",
        samples=f"{sizes['rounds']} rounds",
        ratio=ratio,
        variant=variant if control else "",
    )
    if not control:
        trends(ctx, prefix, kind, sizes, samples, cpu, db_work, drains)
    return figure


def trends(ctx, prefix: str, kind: str, sizes: dict, samples: dict, cpu, db_work, drains: list[float]) -> None:
    """The figures beside a throughput ratio that say where the time went: the on server's rate, each side's
    p99, CPU, statements and write transactions per submission, and the outbox's drain after each round."""
    rounds = f"{sizes['rounds']} rounds"
    add = partial(ctx.report.add, database=kind, goal="")
    add(
        f"{prefix}_on_submissions_per_s",
        samples["on"].rate(),
        note="the on server's share of the paired load",
        samples=rounds,
    )
    for side in ("on", "off"):
        requests = samples[side]
        add(
            f"{prefix}_{side}_p99_ms",
            requests.percentile(0.99) * 1000,
            samples=f"{len(requests.latencies)} requests, {requests.above(0.99)} above p99",
        )
    add(
        f"{prefix}_on_cpu_ms_per_submission",
        cpu.per_request("on"),
        note=f"CPU time of the on server's processes per submission during the rounds, vs "
        f"{cpu.per_request('off'):.2f} ms for the off server; the machine's CPUs were busy "
        f"{cpu.busy():.0%} of the rounds (every process: the servers, the clients, the sinks, other work)",
        samples=rounds,
    )
    on, off = db_work.per_submission("on"), db_work.per_submission("off")
    add(
        f"{prefix}_on_statements_per_submission",
        on["statements"],
        note=f"every statement of the on server during the rounds (requests, and any outbox pass then) per "
        f"submission, vs {off['statements']:.1f} for the off server",
        samples=rounds,
    )
    add(
        f"{prefix}_on_write_ms_per_submission",
        on["write_ms"],
        note=f"write transactions of the on server during the rounds per submission: {on['write_ms']:.2f} ms held "
        f"({on['visitor_ms']:.2f} in requests, {on['runner_ms']:.2f} in outbox passes), "
        f"{on['transactions']:.2f} transactions, {on['changes']:.1f} rows changed; off: {off['write_ms']:.2f} ms, "
        f"{off['transactions']:.2f} transactions, {off['changes']:.1f} rows (SQLite: its one write lock, "
        f"from taking it to the end of COMMIT; PostgreSQL: BEGIN to COMMIT)",
        samples=rounds,
    )
    share = db_work.lock_wait_share()
    if share is not None:
        add(
            f"{prefix}_lock_wait_share",
            share,
            note="of the three servers' PostgreSQL backends in a transaction during the rounds (sampled every "
            "50 ms), the share waiting for a lock (a row another transaction holds until its COMMIT); found "
            "waiting in: "
            + "; ".join(
                f"{statement!r} {count}"
                for statement, count in sorted(db_work.waiting_in.items(), key=lambda item: -item[1])[:3]
            ),
            samples=f"{len(db_work.backends)} samples",
        )
    add(
        f"{prefix}_drain_seconds",
        max(drains),
        note=f"longest wait after a {sizes['seconds']:g} s round until the outbox was empty (the sends wait "
        f"for quiet moments, up to {QUIET_WAIT:g} s a pass)",
        samples=f"{len(drains)} rounds",
    )


class DatabaseWork:
    """What each server asked of the database during the rounds: statements (``bench.wsgi``'s counters) and
    write transactions (``bench.txlog``: milliseconds held, rows changed, in requests or in outbox passes)."""

    def __init__(self, servers: dict, folders: dict):
        self.servers, self.folders = servers, folders
        self.totals = {name: {"statements": 0, "requests": 0} for name in servers}
        self.windows: list[tuple[float, float]] = []
        self.backends: list[tuple[int, int]] = []  # PostgreSQL: (in a transaction, of them waiting for a lock)
        self.waiting_in: dict[str, int] = {}  # the statements found waiting for a lock (their start), how often

    @contextmanager
    def measure(self, database):
        before = {name: server.counters() for name, server in self.servers.items()}
        began = time.time()
        stop = threading.Event()
        sampler = threading.Thread(target=self._sample_backends, args=(database, stop))
        if database.kind == "postgresql":
            sampler.start()
        yield
        stop.set()
        if sampler.is_alive():
            sampler.join()
        self.windows.append((began, time.time()))
        for name, server in self.servers.items():
            after = server.counters()
            for counter in ("statements", "requests"):
                self.totals[name][counter] += after[counter] - before[name][counter]

    def per_submission(self, name: str) -> dict[str, float]:
        """Statements, write transactions, their milliseconds (in requests, in passes) and rows changed,
        per submission ``name`` answered in the rounds."""
        totals = {"statements": self.totals[name]["statements"], "transactions": 0, "changes": 0}
        totals.update(write_ms=0.0, visitor_ms=0.0, runner_ms=0.0)
        for path in self.folders[name].glob("txn-*.jsonl"):
            for line in path.read_text().splitlines():
                record = _record(line)
                if record is None or record["type"] != "txn" or not self._within(record["t"]):
                    continue
                totals["transactions"] += 1
                totals["changes"] += record["changes"]
                totals["write_ms"] += record["ms"]
                totals["visitor_ms" if record["who"] == "visitor" else "runner_ms"] += record["ms"]
        return {key: value / max(self.totals[name]["requests"], 1) for key, value in totals.items()}

    def _sample_backends(self, database, stop: threading.Event) -> None:
        """Every 50 ms, the servers' PostgreSQL backends in a transaction and how many of them wait for a lock
        (a row another transaction holds until its COMMIT)."""
        query = text(
            "SELECT wait_event_type = 'Lock', left(query, 40) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() AND xact_start IS NOT NULL"
        )
        with database.engine.connect() as connection:
            while not stop.wait(0.05):
                rows = connection.execute(query).all()
                connection.rollback()
                waiting = [statement for locked, statement in rows if locked]
                self.backends.append((len(rows), len(waiting)))
                for statement in waiting:
                    self.waiting_in[statement] = self.waiting_in.get(statement, 0) + 1

    def lock_wait_share(self) -> float | None:
        """The share of sampled backends in a transaction that were waiting for a lock (None: not sampled)."""
        busy = sum(each for each, _ in self.backends)
        return sum(waiting for _, waiting in self.backends) / busy if busy else None

    def _within(self, moment: float) -> bool:
        return any(began <= moment <= ended for began, ended in self.windows)


def _record(line: str) -> dict | None:
    try:
        return json.loads(line)
    except ValueError:  # a line cut short by the kill
        return None


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
        machine = machine_ticks()
        yield
        for name, server in servers.items():
            self.seconds[name] = self.seconds.get(name, 0.0) + self._process_seconds(server) - before[name]
        busy, total = machine_ticks()
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


def delivery_times(ctx, database, sizes, on_settings: dict, api_port: int | None = None) -> None:
    """Paced submissions (10/s) to an "on" server; submission → delivery per channel, from the outbox rows.
    With ``api_port`` (the chat services' stand-in): the six chat channels, and how long after the last
    submission the last of their messages reached the stand-in."""
    channels = CHAT if api_port else ("email", "webhook")
    engine = database.engine
    with engine.connect() as connection:
        first = connection.scalar(text("SELECT coalesce(max(id), 0) FROM deliveries"))
    name = "chat" if api_port else "notify"
    arrived = received(api_port) if api_port else None
    with serve(database.url, ctx.workdir, f"{name}-paced-{database.kind}", **on_settings) as server:
        bodies = solved_bodies(server.port, sizes["paced"])
        before = server.counters()
        pressure = CpuPressure()
        last_submission = paced(server.port, bodies, per_second=10)
        if arrived is not None:
            expected = (arrived["counted"], len(CHAT) * len(bodies))
            drained(ctx, database.kind, api_port, expected, last_submission, server, before, pressure)
        rows = wait_delivered(engine, first, len(channels) * sizes["paced"])
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


def drained(ctx, kind: str, api_port: int, expected: tuple, last_submission: float, server, before, pressure) -> None:
    """Wait until the stand-in received ``expected`` chat messages (those counted before the paced run, and
    how many it sends); the figures of how long after the last submission (``time.time()``) the last arrived,
    in all and after the sends' last wait for the machine."""
    earlier, sent = expected
    expected = earlier + sent
    deadline = time.monotonic() + 120
    arrived = received(api_port)
    while arrived["counted"] < expected and time.monotonic() < deadline:
        time.sleep(0.05)
        arrived = received(api_port)
    busy, after = pressure.share(), server.counters()
    waited = (after["quiet_waits_us"] - before["quiet_waits_us"]) / 1e6
    machine_end = after["machine_wait_end_us"] / 1e6
    whole = arrived["last_at"] - last_submission if arrived["counted"] >= expected else None
    own = arrived["last_at"] - max(last_submission, machine_end) if whole is not None else None
    missing = max(expected - arrived["counted"], 0)
    context = (
        f"the machine's CPUs were contended (some task waiting) {busy:.0%} of the time from the first paced "
        f"submission to the last arrival (the sends wait while above {CPU_BUSY_SHARE:.0%}, up to {QUIET_WAIT:g} s "
        f"a pass); the passes waited for quiet moments {waited:.1f} s in all"
    )
    figures = {
        "notify_chat_drained_after_s": (
            whole,
            "from the last of the paced submissions (10/s, six chat channels) until the last chat message reached "
            f"the services' stand-in; {context}",
        ),
        "notify_chat_outbox_drain_s": (
            own,
            "the same, from the end of the sends' last wait for a busy machine (a wait over "
            f"{STOP_CHECK:g} s, bench.wsgi) if that came after the last submission: the outbox's own work",
        ),
    }
    for name, (value, note) in figures.items():
        ctx.report.add(name, value, "≤ 1", kind, note, samples=f"{sent} messages, {missing} missing")


def received(api_port: int) -> dict:
    """How many requests the chat services' stand-in answered, and ``time.time()`` of the last one's arrival."""
    connection = http.client.HTTPConnection("127.0.0.1", api_port, timeout=30)
    try:
        connection.request("GET", "/_received")
        return json.loads(connection.getresponse().read())
    finally:
        connection.close()


class CpuPressure:
    """The share of wall time some task waited for a CPU since it was made (Linux's ``/proc/pressure/cpu``,
    what the app's quiet moments are judged by)."""

    def __init__(self):
        self.began, self.stalled = time.monotonic(), self._stalled_us()

    def share(self) -> float:
        """The share since ``__init__`` (0 where the kernel does not say)."""
        now, stalled = time.monotonic(), self._stalled_us()
        if stalled is None or self.stalled is None:
            return 0.0
        return (stalled - self.stalled) / 1e6 / max(now - self.began, 1e-9)

    @staticmethod
    def _stalled_us() -> int | None:
        try:
            with open(CPU_PRESSURE, "rb") as file:
                return int(file.readline().rsplit(b"total=", 1)[1])
        except (OSError, ValueError, IndexError):
            return None


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
    """``CLIENTS`` keep-alive clients, each sending to ``ports`` in turn, ``IN_A_ROW`` requests to each
    (client ``i`` starting at port ``i``), until ``seconds`` pass or a port's ``bodies`` run out; the samples
    per port.

    Every server sees the same moments of the machine, so a drift in its
    speed (other work, the CPU's clock) falls on all of them alike. A
    request that follows another on the same connection at once waits for
    whatever the server still does on that connection after the first
    response (its close callbacks): one request each before moving on, a
    client came back to a server only after two other servers' answers,
    long enough on a loaded machine to hide sends made on the connection
    (``notify_inline`` passed on PostgreSQL).
    """
    lock = threading.Lock()
    remaining = {port: list(each) for port, each in bodies.items()}
    parts = [{port: Samples() for port in ports} for _ in range(CLIENTS)]
    deadline = time.perf_counter() + seconds

    def client(index: int) -> None:
        connections = {port: http.client.HTTPConnection("127.0.0.1", port, timeout=30) for port in ports}
        try:
            turn = index * IN_A_ROW
            while time.perf_counter() < deadline:
                port = ports[turn // IN_A_ROW % len(ports)]
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


def paced(port: int, bodies: list[bytes], per_second: float) -> float:
    """Send ``bodies`` one by one at ``per_second`` on one keep-alive connection; ``time.time()`` when the last
    was answered."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        start = time.perf_counter()
        for index, body in enumerate(bodies):
            time.sleep(max(0.0, start + index / per_second - time.perf_counter()))
            _post(connection, body)
        return time.time()
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
