#!/usr/bin/python3
"""Serving benchmark: the real stack under load over HTTP (SSE) and gRPC, shaped like vLLM's
benchmark_serving and SGLang's bench_serving.

Starts loader, executor and scheduler serving models/unmask-kjv as tools/demo.sh does (ports picked
by the services; stopped again at the end, on errors and on Ctrl-C), or uses a running stack
(--http URL, --grpc HOST:PORT). Requests are drawn with a fixed seed from a mixed set (KJV
continuations and chat questions of different lengths, max_tokens from --max-tokens).

  closed    C clients at each --concurrency, each sending its next request when its last ended
  open      Poisson arrivals at each --rates (req/s, or Nx = N times the measured capacity, the
            best closed-loop req/s), --open-seconds each
  overload  Poisson arrivals at --overload-factor x capacity for --overload-seconds; passes when
            every answer is a result or a 429 / RESOURCE_EXHAUSTED (no timeout, no 5xx), the p99
            latency of accepted requests does not grow (last third of the window against the
            first), and every accepted job ended with its result (none lost)

Every run reports requests ok and errors by kind (429, 5xx, timeout, other), generated tokens/s,
requests/s, time to the first final text (HTTP: the first chunk carrying text; gRPC: the first
step with tokens) and latency at p50/p99, and how many answers differ from the same request's
text alone (temperature 0). Exits 1 when a check fails: an error in a closed run, an error other
than a 429 in an open run, a text that differs, a failed overload check. --doc writes the tables
into the bench:serving section of docs/benchmarks.md.

  bench/services/bench_serving.py [--modes closed,open,overload] [--protocols http,grpc] [--doc docs/benchmarks.md]
  bench/services/bench_serving.py --quick          # concurrency 1 and 2, a few short requests (CTest)
"""
import argparse
import json
import os
import resource
import shlex
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import serving_load as load  # noqa: E402
import serving_report as report  # noqa: E402
from serving_stack import Stack, StackError  # noqa: E402


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--modes", default="closed,open,overload", help="closed, open, overload (comma-separated)")
    ap.add_argument("--protocols", default="http,grpc")
    ap.add_argument("--concurrency", default="1,4,8,16,64", help="closed-loop client counts")
    ap.add_argument("--requests", type=int, default=32, help="requests per closed run (at least 2x its concurrency)")
    ap.add_argument("--duration", type=float, default=0, help="seconds per closed run instead of --requests")
    ap.add_argument("--rates", default="0.5x,1x,1.5x", help="open-loop req/s; Nx = N times the measured capacity")
    ap.add_argument("--open-seconds", type=float, default=30)
    ap.add_argument("--overload-factor", type=float, default=2.0)
    ap.add_argument("--overload-seconds", type=float, default=60)
    ap.add_argument("--capacity", type=float, default=0, help="req/s to use instead of the best closed run's")
    ap.add_argument("--max-tokens", default="32,64,96", help="max_tokens drawn per request")
    ap.add_argument("--sampler", default="dual_cache+threshold")
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=120, help="seconds a request may take before it is a timeout")
    ap.add_argument("--http", help="a running scheduler's HTTP API (http://host:port); no stack is started")
    ap.add_argument("--grpc", help="a running scheduler's gRPC address (host:port); no stack is started")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--python-client", help="folder of the generated Python client (default: BUILD/clients/python)")
    ap.add_argument("--model-root", default=os.path.join(ROOT, "models"))
    ap.add_argument("--model", default="unmask-kjv")
    ap.add_argument("--max-queue", type=int, default=0,
                    help="the started scheduler's --max-queue; 0: the largest --concurrency (closed runs are never "
                         "refused, and an overload's wait stays near max-queue / capacity; the scheduler's own 1000 "
                         "would queue minutes of work here)")
    ap.add_argument("--redis", action="store_true", help="the started scheduler keeps its jobs in a redis-server")
    ap.add_argument("--executor-args", default="", help="extra flags of the started executor")
    ap.add_argument("--scheduler-args", default="", help="extra flags of the started scheduler")
    ap.add_argument("--quick", action="store_true", help="closed runs at concurrency 1 and 2, six short requests each")
    ap.add_argument("--doc", help="markdown file whose bench:serving section gets the tables")
    a = ap.parse_args(argv)
    if a.quick:
        a.modes, a.concurrency, a.requests, a.max_tokens, a.timeout = "closed", "1,2", 6, "16,32", 60
    a.modes = _list(a.modes, str, {"closed", "open", "overload"}, "--modes")
    a.protocols = _list(a.protocols, str, {"http", "grpc"}, "--protocols")
    a.concurrency = _list(a.concurrency, int, None, "--concurrency")
    a.max_tokens = _list(a.max_tokens, int, None, "--max-tokens")
    if a.http or a.grpc:
        a.protocols = [p for p in a.protocols if (p == "http" and a.http) or (p == "grpc" and a.grpc)]
    if not a.protocols:
        ap.error("no protocol left to run (--protocols against --http/--grpc)")
    return a


def stop_ids(model_root, model):
    """The model's EOS and EOT ids (config.json), which end an answer; LLaDA's where it names none."""
    try:
        with open(os.path.join(model_root, model, "config.json")) as f:
            config = json.load(f)
    except OSError:
        config = {}
    return frozenset((config.get("eos_token_id", 126081), config.get("eot_token_id", 126348)))


def _list(text, kind, allowed, flag):
    items = [kind(x) for x in text.split(",") if x.strip()]
    if not items or (allowed and not set(items) <= allowed):
        raise SystemExit(f"{flag}: {text!r} (one or more of {sorted(allowed) if allowed else 'numbers'})")
    return items


class Bench:
    def __init__(self, a, http_url, grpc_target, stack=None):
        from unmask_client import Client
        self.a, self.stack = a, stack
        self.params = load.Params(a.model, a.sampler, a.temperature, a.timeout, stop_ids(a.model_root, a.model))
        self.http_url = http_url
        self.client = Client(grpc_target, timeout=a.timeout) if grpc_target else None
        self.runs = []  # report.Run, in the order they ran
        self.overloads = []  # report.Overload

    def send(self, protocol):
        if protocol == "http":
            return lambda req: load.http_request(self.http_url, req, self.params)
        return lambda req: load.grpc_request(self.client, req, self.params)

    def _record(self, protocol, mode, setting, outcomes, wall, offered=None):
        if self.stack and self.stack.exited():
            raise StackError(f"{', '.join(self.stack.exited())} exited during the {mode} run ({setting})")
        run = report.Run(protocol, mode, setting, outcomes, wall, load.figures(outcomes, wall), offered)
        self.runs.append(run)
        f = run.figures
        print(f"{protocol} {mode} {setting}: {f.ok}/{f.requests} ok, errors {f.errors}, {f.tokens_per_s:.1f} tok/s, "
              f"{f.requests_per_s:.2f} req/s, latency p50 {report.secs(f.latency_p50)} p99 {report.secs(f.latency_p99)}",
              file=sys.stderr, flush=True)
        for d in f.details:
            print(f"  {d}", file=sys.stderr)
        return run

    def closed(self, protocol, concurrency):
        if self.a.duration:  # as many requests as fit: clients take no new one after --duration
            requests = load.draw(self.a.seed, 100000, self.a.max_tokens)
            deadline = time.monotonic() + self.a.duration
        else:
            requests = load.draw(self.a.seed, max(self.a.requests, 2 * concurrency), self.a.max_tokens)
            deadline = None
        outcomes, wall = load.run_closed(self.send(protocol), requests, concurrency, deadline)
        return self._record(protocol, "closed", f"c={concurrency}", outcomes, wall)

    def capacity(self, protocol):
        if self.a.capacity:
            return self.a.capacity
        closed = [r for r in self.runs if r.protocol == protocol and r.mode == "closed"]
        if not closed:  # no closed runs asked for: measure at 16 clients
            closed = [self.closed(protocol, 16)]
        return max(r.figures.requests_per_s for r in closed)

    def open(self, protocol, rate, label, seconds, seed, mode="open"):
        arrivals = load.poisson_schedule(seed, rate, seconds)
        requests = load.draw(seed, len(arrivals), self.a.max_tokens)
        outcomes, wall = load.run_open(self.send(protocol), requests, arrivals)
        return self._record(protocol, mode, label, outcomes, wall, offered=rate)

    def overload(self, protocol):
        cap = self.capacity(protocol)
        rate = self.a.overload_factor * cap
        run = self.open(protocol, rate, f"{rate:.2f} req/s ({self.a.overload_factor:g}x)", self.a.overload_seconds,
                        self.a.seed + 7919, mode="overload")
        states = {}
        for o in run.outcomes:  # accepted without a result: what the job store says became of it
            if o.job_id and not o.ok and self.client is not None:
                try:
                    states[o.job_id] = self.client.job(o.job_id).state
                except Exception as e:  # noqa: BLE001 - reported, not fatal
                    states[o.job_id] = f"unknown ({e})"
        self.overloads.append(report.overload_verdict(run, self.a.overload_seconds, states))

    def alone(self):
        """Each (protocol, prompt, max_tokens) answered by itself: closed c=1 where it ran, the
        rest sent one at a time now."""
        refs = {}
        for r in self.runs:
            if r.mode == "closed" and r.setting == "c=1":
                refs.update({(o.protocol, o.request.key): o.text for o in r.outcomes if o.ok})
        needed = {(o.protocol, o.request.key) for r in self.runs for o in r.outcomes if o.ok} - set(refs)
        for protocol, key in sorted(needed):
            o = self.send(protocol)(load.Request(*key))
            if o.ok:
                refs[(protocol, key)] = o.text
        self.alone_extra = len(needed)
        return refs

    def run(self):
        for protocol in self.a.protocols:
            for req in load.draw(self.a.seed + 1, 2, self.a.max_tokens):  # warm-up, not counted
                self.send(protocol)(req)
            if "closed" in self.a.modes:
                for c in self.a.concurrency:
                    self.closed(protocol, c)
            if "open" in self.a.modes:
                cap = self.capacity(protocol)
                for i, spec in enumerate(x for x in self.a.rates.split(",") if x):
                    rate = float(spec[:-1]) * cap if spec.endswith("x") else float(spec)
                    label = f"{rate:.2f} req/s" + (f" ({spec})" if spec.endswith("x") else "")
                    self.open(protocol, rate, label, self.a.open_seconds, self.a.seed + 101 * (i + 1))
            if "overload" in self.a.modes:
                self.overload(protocol)
        return self.alone()


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    sys.path.insert(0, a.python_client or os.path.join(a.build, "clients", "python"))
    try:
        import unmask_client  # noqa: F401
    except ImportError as e:
        raise SystemExit(f"bench_serving: no Python client ({e}); build the target unmask_python_client and "
                         "run with /usr/bin/python3 (Debian's python3-grpcio)")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the with-blocks stop the services
    started = time.time()
    load_avg = os.getloadavg()
    if a.http or a.grpc:
        bench, stack_flags = Bench(a, a.http, a.grpc), None
        refs = bench.run()
    else:
        max_queue = a.max_queue or max(a.concurrency)
        scheduler_args = ["--max-queue", str(max_queue)] + shlex.split(a.scheduler_args)
        with Stack(a.build, a.model_root, a.model, shlex.split(a.executor_args), scheduler_args, a.redis) as stack:
            bench = Bench(a, stack.http_url, stack.grpc_target, stack)
            refs = bench.run()
            stack_flags = {k: [os.path.relpath(x, ROOT) if x.startswith(ROOT) else x for x in v]
                           for k, v in stack.flags.items()}
    report.compare(bench.runs, refs)
    own = resource.getrusage(resource.RUSAGE_SELF)
    client_cpu = (own.ru_utime + own.ru_stime, time.time() - started)
    text = report.render(a, bench.runs, bench.overloads, bench.alone_extra, stack_flags, started, load_avg, client_cpu,
                         ROOT, sys.argv[1:] if argv is None else argv)
    failures = report.failures(bench.runs, bench.overloads)
    print(text)
    if a.doc:
        report.write_doc(a.doc, text)
    for f in failures:
        print(f"FAILED: {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except StackError as e:
        sys.exit(f"bench_serving: {e}")
    except KeyboardInterrupt:
        sys.exit(130)
