"""What tools/cluster, tools/bench-routing and tools/bench-remote share (docs/SCALE_OUT.md): free
loopback ports, Debian's redis-server and haproxy started on them, Anchorage replicas started,
killed and started again, HTTP requests to them (whole or streamed), and a minimal Redis client.

Python 3 standard library only. The tools load it with
    sys.dont_write_bytecode = True; sys.path.insert(0, ROOT + "/tools/cluster.d"); import cluster_lib
(no __pycache__ left in the tree).
"""

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEMPLATE = os.path.join(ROOT, "tools", "cluster.d", "haproxy.cfg.in")
DEFAULT_BINARY = os.path.join(ROOT, "build", "anchorage")


class Failed(Exception):
    """A step that could not be done (a process that did not start, a status that was not 200)."""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def accepts(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def wait_for(what, ready, proc, within_s):
    end = time.time() + within_s
    while time.time() < end:
        if proc is not None and proc.poll() is not None:
            raise Failed("%s exited at start (status %s)" % (what, proc.returncode))
        if ready():
            return
        time.sleep(0.05)
    raise Failed("%s was not ready within %d s" % (what, within_s))


def installed(exe):
    return shutil.which(exe) or (os.path.exists("/usr/sbin/" + exe) and "/usr/sbin/" + exe)


def require(*exes):
    for exe in exes:
        if not installed(exe):
            raise SystemExit("%s is not installed (tools/bootstrap test installs it)" % exe)


def exit_on_sigterm():
    """A SIGTERM to a tool raises SystemExit in its main thread: its finally blocks then stop the
    processes it started (Python's default would end it at once, leaving them running)."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


def child_env():
    env = dict(os.environ)
    env.pop("ANCHORAGE_ADMIN_TOKEN", None)  # the tools read the admin routes without a token
    return env


def spawn(args, log_path):
    out = open(log_path, "a")
    try:
        return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=child_env())
    finally:
        out.close()


def stop_process(proc, grace_s=120):
    """SIGTERM (a replica's planned stop), then SIGKILL after grace_s."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# ---------------------------------------------------------------- HTTP

def request(port, method, path, body=None, headers=None, timeout=600):
    """One whole request: (status, headers as a dict with lower-case names, body bytes, seconds)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    h = dict(headers or {})
    data = None
    if body is not None:
        data = body if isinstance(body, (bytes, str)) else json.dumps(body)
        h.setdefault("Content-Type", "application/json")
    t0 = time.monotonic()
    try:
        c.request(method, path, data, h)
        r = c.getresponse()
        out = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, out, time.monotonic() - t0
    finally:
        c.close()


def http_get(port, path, timeout=10):
    status, _, body, _ = request(port, "GET", path, timeout=timeout)
    return status, body


def healthy(port):
    try:
        return http_get(port, "/health", timeout=2)[0] == 200
    except OSError:
        return False


def stream(port, path, body, headers=None, timeout=600):
    """A streamed request (OpenAI's or Anthropic's server-sent events), read event by event.
    Returns {status, headers, events (the parsed data objects), ttft_s (the first event that
    carries generated text, reasoning or a tool call), total_s, error (the body when not 200)}."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    h = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    h.update(headers or {})
    t0 = time.monotonic()
    out = {"events": [], "ttft_s": None}
    try:
        c.request("POST", path, json.dumps(body), h)
        r = c.getresponse()
        out["status"] = r.status
        out["headers"] = {k.lower(): v for k, v in r.getheaders()}
        if r.status != 200:
            out["error"] = r.read()[:500].decode("utf-8", "replace")
            out["total_s"] = time.monotonic() - t0
            return out
        while True:
            line = r.readline()
            if not line:
                break
            line = line.strip()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                break
            ev = json.loads(data)
            if out["ttft_s"] is None and carries_output(ev):
                out["ttft_s"] = time.monotonic() - t0
            out["events"].append(ev)
        out["total_s"] = time.monotonic() - t0
        return out
    finally:
        c.close()


def carries_output(ev):
    if ev.get("type") == "content_block_delta":
        return True
    for ch in ev.get("choices") or []:
        d = ch.get("delta") or {}
        if d.get("content") or d.get("reasoning_content") or d.get("tool_calls"):
            return True
    return False


# ---------------------------------------------------------------- Redis

class Redis:
    """Debian's redis-server on a free loopback port, no persistence."""

    def __init__(self, folder, port=None):
        self.port = port or free_port()
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--protected-mode", "no", "--dir", folder, "--logfile", os.path.join(folder, "redis.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for("redis-server", self.pings, self.proc, 20)

    def url(self):
        return "redis://127.0.0.1:%d" % self.port

    def pings(self):
        try:
            return self.command("PING") == "PONG"
        except OSError:
            return False

    def command(self, *args):
        return self.pipeline([args])[0]

    def pipeline(self, commands):
        """Sends every command, then reads every reply (RESP2): ints, strings, lists, None;
        an error reply is raised as Failed."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
            payload = b""
            for args in commands:
                payload += b"*%d\r\n" % len(args)
                for a in args:
                    a = a if isinstance(a, bytes) else str(a).encode()
                    payload += b"$%d\r\n%s\r\n" % (len(a), a)
            s.sendall(payload)
            f = s.makefile("rb")
            return [_resp_read(f) for _ in commands]

    def stop(self):
        stop_process(self.proc, 20)


def _resp_read(f):
    line = f.readline()
    if not line:
        raise OSError("redis closed the connection")
    kind, rest = line[:1], line[1:-2]
    if kind == b"+":
        return rest.decode()
    if kind == b"-":
        raise Failed("redis: " + rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)
        return data[:-2]
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [_resp_read(f) for _ in range(n)]
    raise OSError("redis: unexpected reply %r" % line)


# ---------------------------------------------------------------- replicas

class Replica:
    """One Anchorage process on a fixed loopback port; kill() and start() again keep the port and
    the arguments (so a replica killed with SIGKILL comes back on its own folder)."""

    def __init__(self, name, binary, args, log_path, port=None):
        self.name = name
        self.port = port or free_port()
        self.args = [binary, "--host", "127.0.0.1", "--port", str(self.port)] + list(args)
        self.log_path = log_path
        self.proc = None

    def start(self, within_s=300):
        self.proc = spawn(self.args, self.log_path)
        return self

    def wait_healthy(self, within_s=300):
        wait_for(self.name, lambda: healthy(self.port), self.proc, within_s)
        return self

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        """SIGKILL: no drain, no flush, nothing sent."""
        self.proc.kill()
        self.proc.wait()

    def stop(self, grace_s=120):
        stop_process(self.proc, grace_s)

    def stats(self):
        status, body = http_get(self.port, "/v1/cache/stats")
        if status != 200:
            raise Failed("%s: /v1/cache/stats answered %d" % (self.name, status))
        return json.loads(body)

    def remote(self):
        """The remote tier's counters (tiers.disk.remote), {} when the replica does not answer."""
        try:
            return self.stats()["tiers"]["disk"].get("remote", {})
        except (OSError, Failed, KeyError, ValueError):
            return {}


# ---------------------------------------------------------------- HAProxy

def haproxy_config(bind, servers, balance=None, served_by=True, stats_socket=None, template=TEMPLATE):
    """The project's template with its placeholders filled in. balance: None keeps the template's
    (a consistent hash of the session), or a replacement such as "roundrobin". served_by: every
    answer carries x-anchorage-replica, the replica that served it (for the tools; not in the
    template). stats_socket: a path for HAProxy's runtime API (show stat), for the tools."""
    with open(template) as f:
        cfg = f.read()
    lines = "".join("    server %s 127.0.0.1:%d check\n" % (name, port) for name, port in servers)
    cfg = cfg.replace("@BIND@", bind).replace("@SERVERS@", lines)
    if balance is not None:
        old = "    balance hash var(txn.session)\n"
        if old not in cfg:
            raise Failed("the template has no line %r to replace" % old.strip())
        cfg = cfg.replace(old, "    balance %s\n" % balance)
    if served_by:
        cfg = cfg.replace("\nbackend replicas\n",
                          "\nbackend replicas\n    http-response set-header x-anchorage-replica %[srv_name]\n", 1)
    if stats_socket:
        cfg = cfg.replace("\nglobal\n", "\nglobal\n    stats socket %s mode 600 level user\n" % stats_socket, 1)
    return cfg


class Haproxy:
    def __init__(self, folder, port, servers, balance=None):
        self.port = port
        self.socket_path = os.path.join(folder, "haproxy.sock")
        self.cfg_path = os.path.join(folder, "haproxy.cfg")
        with open(self.cfg_path, "w") as f:
            f.write(haproxy_config("127.0.0.1:%d" % port, servers, balance=balance, stats_socket=self.socket_path))
        exe = installed("haproxy")
        check = subprocess.run([exe, "-c", "-q", "-f", self.cfg_path], capture_output=True, text=True)
        if check.returncode != 0:
            raise Failed("haproxy refuses %s: %s" % (self.cfg_path, (check.stdout + check.stderr).strip()))
        self.proc = spawn([exe, "-db", "-f", self.cfg_path], os.path.join(folder, "haproxy.log"))
        wait_for("haproxy", lambda: accepts(port), self.proc, 20)

    def show_stat(self):
        """HAProxy's `show stat` as a list of dicts (pxname, svname, status, ...)."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(5)
            s.connect(self.socket_path)
            s.sendall(b"show stat\n")
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        lines = data.decode().splitlines()
        if not lines or not lines[0].startswith("# "):
            return []
        head = lines[0][2:].split(",")
        return [dict(zip(head, line.split(","))) for line in lines[1:] if line]

    def server_status(self, name):
        """The server's status as HAProxy sees it ("UP", "DOWN", ...); "" while the stats socket is
        not there yet (HAProxy may accept on its port before it renamed the socket in place)."""
        try:
            rows = self.show_stat()
        except OSError:
            return ""
        for row in rows:
            if row.get("pxname") == "replicas" and row.get("svname") == name:
                return row.get("status", "")
        return ""

    def wait_status(self, name, status, within_s=60):
        end = time.time() + within_s
        while time.time() < end:
            if self.server_status(name).startswith(status):
                return
            time.sleep(0.05)
        raise Failed("haproxy did not see %s %s within %d s" % (name, status, within_s))

    def stop(self):
        stop_process(self.proc, 20)


# ---------------------------------------------------------------- the cluster

class Cluster:
    """Redis (unless remote=False), N replicas each with its own folder DIR/rN and --remote-cache
    on that Redis, and HAProxy in front. balance: None for the template's, or "roundrobin"."""

    def __init__(self, binary=DEFAULT_BINARY, replicas=2, port=0, folder="", salt="cluster", preset="tiny",
                 flags=(), balance=None, remote=True, log=None):
        self.log = log or (lambda msg: None)
        self.folder = folder or tempfile.mkdtemp(prefix="anchorage-cluster-")
        os.makedirs(self.folder, exist_ok=True)
        self.redis = None
        self.replicas = []
        self.haproxy = None
        try:
            if remote:
                self.redis = Redis(self.folder)
            for i in range(replicas):
                name = "r%d" % i
                args = ["--preset", preset, "--cache-dir", os.path.join(self.folder, name)]
                if remote:
                    args += ["--remote-cache", self.redis.url(), "--cache-salt", salt]
                self.replicas.append(Replica(name, binary, args + list(flags),
                                             os.path.join(self.folder, name + ".log")).start())
            for r in self.replicas:
                r.wait_healthy()
            self.port = port or free_port()
            self.haproxy = Haproxy(self.folder, self.port, [(r.name, r.port) for r in self.replicas], balance)
            for r in self.replicas:
                self.haproxy.wait_status(r.name, "UP")
        except BaseException:
            self.stop()
            raise

    def replica(self, name):
        return next(r for r in self.replicas if r.name == name)

    def endpoints(self):
        return {"front": "http://127.0.0.1:%d" % self.port,
                "redis": self.redis.url() if self.redis else None,
                "replicas": {r.name: "http://127.0.0.1:%d" % r.port for r in self.replicas},
                "dir": self.folder, "haproxy_cfg": self.haproxy.cfg_path}

    def stop(self):
        # HAProxy first, then the replicas (planned stops), Redis last.
        if self.haproxy:
            self.haproxy.stop()
        for r in self.replicas:
            r.stop()
        if self.redis:
            self.redis.stop()
