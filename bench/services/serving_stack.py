"""The real stack for bench_serving.py: loader, executor and scheduler (and redis-server when asked)
started as tools/demo.sh starts them, on ports the services pick themselves (port 0, read back
from the line each prints), stopped again with SIGTERM (the loader frees its shared-memory
segment) when the `with` block ends, also on errors and Ctrl-C."""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

START_TIMEOUT_S = 120


class StackError(RuntimeError):
    pass


class Stack:
    """`with Stack(build, model_root, model) as s:` then s.http_url, s.grpc_target."""

    def __init__(self, build, model_root, model, executor_args=(), scheduler_args=(), redis=False):
        self.build, self.model_root, self.model = build, model_root, model
        self.executor_args, self.scheduler_args, self.redis = list(executor_args), list(scheduler_args), redis
        self.procs = []  # (name, Popen), in start order
        self.logs = None
        self.http_url = self.grpc_target = None
        self.flags = {}  # name -> the argv it ran with, for the report

    def __enter__(self):
        self.logs = tempfile.mkdtemp(prefix="bench-serving-")
        try:
            self._start()
        except BaseException:
            self.stop(keep_logs=True)
            raise
        return self

    def __exit__(self, exc_type, *exc):
        failed = exc_type is not None and issubclass(exc_type, Exception)  # not on Ctrl-C or SIGTERM
        self.stop(keep_logs=failed or bool(self.exited()))

    def _bin(self, rel):
        path = os.path.join(self.build, rel)
        if not os.access(path, os.X_OK):
            raise StackError(f"{path} is missing: build it first (ninja -C {self.build} unmask-loader "
                             "unmask-executor unmask-scheduler unmask_python_client)")
        return path

    def _spawn(self, name, argv):
        log = open(os.path.join(self.logs, name + ".log"), "w")
        # A process group of its own: Ctrl-C in the terminal reaches only this script, which then
        # stops the services in order.
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             start_new_session=True)
        log.close()
        self.procs.append((name, p))
        self.flags[name] = argv
        return p

    def _wait_for(self, name, p, pattern):
        """The first group of `pattern` in the service's log, once it appears."""
        path = os.path.join(self.logs, name + ".log")
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            with open(path, errors="replace") as f:
                m = re.search(pattern, f.read())
            if m:
                return m.group(1)
            if p.poll() is not None:
                break
            time.sleep(0.1)
        with open(path, errors="replace") as f:
            tail = f.read()[-3000:]
        raise StackError(f"{name} did not start (log {path}):\n{tail}")

    def _start(self):
        redis_args = []
        if self.redis:
            redis = shutil.which("redis-server") or "/usr/bin/redis-server"
            port = _free_port()
            p = self._spawn("redis", [redis, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "yes", "--dir", self.logs])
            self._wait_for("redis", p, r"(Ready) to accept connections")
            redis_args = ["--redis", f"127.0.0.1:{port}"]
        # No metrics port of their own; a short drain: stopping after Ctrl-C does not wait 30 s for the
        # streams this script leaves open.
        metrics = ["--metrics-listen", "127.0.0.1:0", "--drain-timeout-seconds", "2"]
        p = self._spawn("loader", [self._bin("services/loader/unmask-loader"), "--listen", "127.0.0.1:0",
                                   "--model-root", self.model_root, *metrics])
        loader = self._wait_for("loader", p, r"listening on port (\d+)")
        p = self._spawn("executor", [self._bin("services/executor/unmask-executor"), "--listen", "127.0.0.1:0",
                                     "--loader", f"127.0.0.1:{loader}", "--model", self.model, *metrics,
                                     *self.executor_args])
        executor = self._wait_for("executor", p, r"serving \S+ on port (\d+)")
        p = self._spawn("scheduler", [self._bin("services/scheduler/unmask-scheduler"), "--listen", "127.0.0.1:0",
                                      "--executors", f"127.0.0.1:{executor}", "--model-root", self.model_root,
                                      "--http-port", "0", "--http-host", "127.0.0.1", *metrics, *redis_args,
                                      *self.scheduler_args])
        http = self._wait_for("scheduler", p, r"OpenAI-compatible HTTP on port (\d+)")
        grpc_port = self._wait_for("scheduler", p, r"listening on port (\d+)")
        self.http_url, self.grpc_target = f"http://127.0.0.1:{http}", f"127.0.0.1:{grpc_port}"

    def stop(self, keep_logs=False):
        """SIGTERM in reverse start order; SIGKILL for one that is still there after its grace. The
        logs are removed unless keep_logs (then their folder is printed)."""
        for name, p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=15)  # their drain timeout is 2 s
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.procs = []
        if keep_logs and self.logs:
            print(f"bench_serving: the services' logs are kept in {self.logs}", file=sys.stderr)
        elif self.logs and os.path.isdir(self.logs):
            shutil.rmtree(self.logs, ignore_errors=True)

    def exited(self):
        """Names of started services that have exited (a crash under load is an error to report)."""
        return [name for name, p in self.procs if p.poll() is not None]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
