"""Load for bench_serving.py: the workload (seeded draws of mixed prompts and lengths), one streamed
request over HTTP (SSE) or gRPC (the Python client's Generate stream) timed to its first final text
and its end, the closed-loop and open-loop (Poisson) drivers, and the figures of a run."""
import http.client
import json
import random
import socket
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

# Plain continuations of KJV phrases and chat questions, short to long (prompt lengths differ by
# ~10x), in the forms the model was trained on (see models/unmask-kjv/README.md).
PROMPTS: List[Tuple[str, str]] = [
    ("text", "In the beginning"),
    ("text", "And God said unto Moses,"),
    ("text", "The LORD is my shepherd;"),
    ("text", "Blessed are the poor in spirit: for theirs is the kingdom of heaven. Blessed are they that mourn:"),
    ("text", "Now the serpent was more subtil than any beast of the field which the LORD God had made. "
             "And he said unto the woman,"),
    ("text", "And it came to pass, when the king heard the words of the book of the law, that he rent his "
             "clothes. And the king commanded Hilkiah the priest, and Ahikam the son of Shaphan, saying,"),
    ("chat", "What does John 3:16 say?"),
    ("chat", "What does Genesis 1:1 say?"),
    ("chat", "What does Psalms 23:1 say?"),
    ("chat", "Finish the verse: And the LORD spake unto Moses,"),
    ("chat", "Finish the verse: For all the wells which his father's servants had digged in the days"),
    ("chat", "Finish the verse: That thou wilt do us no hurt, as we have not touched thee, and as we have "
             "done unto thee nothing but good, and have sent thee away in peace:"),
]

ERROR_KINDS = ("429", "5xx", "timeout", "other")
CHAT_BLOCK_LENGTH = 8  # chat answers in 8-token blocks, as the demo and the model's chat stage


@dataclass(frozen=True)
class Request:
    prompt: int  # index into PROMPTS
    max_tokens: int

    @property
    def key(self) -> Tuple[int, int]:
        return (self.prompt, self.max_tokens)


def draw(seed: int, count: int, max_tokens: List[int]) -> List[Request]:
    """`count` requests drawn with their own seeded generator: the same list for the same seed."""
    rng = random.Random(seed)
    return [Request(rng.randrange(len(PROMPTS)), rng.choice(max_tokens)) for _ in range(count)]


@dataclass
class Outcome:
    request: Request
    protocol: str
    t_send: float
    t_end: float = 0.0
    t_first: Optional[float] = None  # the first streamed text (HTTP) / step with tokens (gRPC)
    kind: str = "ok"  # "ok" or one of ERROR_KINDS
    detail: str = ""
    text: str = ""
    tokens: int = 0  # generated tokens: the answer's, before the first end-of-text / end-of-turn
    job_id: str = ""  # set once the scheduler accepted the job
    unmasked: Dict[int, int] = field(default_factory=dict)  # position -> token, from the step events

    @property
    def ok(self) -> bool:
        return self.kind == "ok"


@dataclass
class Params:
    model: str = "unmask-kjv"
    sampler: str = "dual_cache+threshold"
    temperature: float = 0.0
    timeout_s: float = 120.0
    stop_ids: frozenset = frozenset((126081, 126348))  # the model's EOS and EOT (LLaDA's by default)


def answer_tokens(unmasked: Dict[int, int], stop_ids) -> int:
    """Tokens before the first EOS/EOT position: what both protocols count alike (the answer's
    tokens, not the padding the model fills the rest of max_tokens with)."""
    stops = [pos for pos, tok in unmasked.items() if tok in stop_ids]
    return min(stops) if stops else len(unmasked)


def http_request(base_url: str, req: Request, p: Params) -> Outcome:
    """POST /v1/completions or /v1/chat/completions with stream: true, read to [DONE]."""
    kind, prompt = PROMPTS[req.prompt]
    body = {"model": p.model, "max_tokens": req.max_tokens, "sampler": p.sampler, "temperature": p.temperature,
            "stream": True}
    if kind == "chat":
        body["messages"], path = [{"role": "user", "content": prompt}], "/v1/chat/completions"
        body["block_length"] = CHAT_BLOCK_LENGTH
    else:
        body["prompt"], path = prompt, "/v1/completions"
    url = urllib.parse.urlsplit(base_url)
    out = Outcome(req, "http", time.monotonic())
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=p.timeout_s)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        out.job_id = resp.getheader("X-Unmask-Job-Id", "")
        if resp.status != 200:
            out.kind = classify_http_status(resp.status)
            out.detail = f"HTTP {resp.status}: {resp.read(300).decode(errors='replace')}"
            return _ended(out)
        _read_sse(resp, out, kind, p.timeout_s)
        out.tokens = answer_tokens(out.unmasked, p.stop_ids)
    except (socket.timeout, TimeoutError):
        out.kind, out.detail = "timeout", f"no answer within {p.timeout_s:g} s"
    except (OSError, http.client.HTTPException, ValueError) as e:
        out.kind, out.detail = "other", f"{type(e).__name__}: {e}"
    finally:
        conn.close()  # before the end of the stream: the scheduler cancels the job
    return _ended(out)


def _read_sse(resp, out: Outcome, kind: str, timeout_s: float) -> None:
    text = []
    while True:
        if time.monotonic() - out.t_send > timeout_s:
            raise socket.timeout()
        line = resp.readline()
        if not line:
            out.kind, out.detail = "other", "the stream ended before [DONE]"
            return
        line = line.strip()
        if not line.startswith(b"data: "):
            continue  # blank separators and ": comment" lines (queued, started, keep-alive)
        data = line[6:]
        if data == b"[DONE]":
            out.text = "".join(text)
            return
        chunk = json.loads(data)
        if "error" in chunk:
            out.kind = classify_stream_error(chunk["error"])
            out.detail = f"in-stream error: {json.dumps(chunk['error'])[:300]}"
            return
        step = chunk.get("unmask", {})
        out.unmasked.update(zip(step.get("positions", []), step.get("tokens", [])))
        for choice in chunk.get("choices", []):
            delta = choice.get("delta", {}).get("content") if kind == "chat" else choice.get("text")
            if delta:
                if out.t_first is None:
                    out.t_first = time.monotonic()
                text.append(delta)


def classify_http_status(status: int) -> str:
    if status == 429:
        return "429"
    return "5xx" if 500 <= status < 600 else "other"


def classify_stream_error(error: dict) -> str:
    """The kind of an OpenAI error object that ended a stream (its HTTP status is no longer sent)."""
    if error.get("type") == "rate_limit_error":
        return "429"
    if error.get("type") in ("server_error", "service_unavailable", "timeout"):
        return "5xx"
    return "other"


def classify_grpc(code) -> str:
    """grpc.StatusCode -> kind: RESOURCE_EXHAUSTED is the 429 of gRPC; the client's own deadline
    is a timeout; what a server answers when it fails is a 5xx."""
    name = getattr(code, "name", str(code))
    if name == "RESOURCE_EXHAUSTED":
        return "429"
    if name == "DEADLINE_EXCEEDED":
        return "timeout"
    if name in ("UNAVAILABLE", "INTERNAL", "UNKNOWN", "DATA_LOSS", "UNIMPLEMENTED"):
        return "5xx"
    return "other"


def grpc_request(client, req: Request, p: Params) -> Outcome:
    """Scheduler.Generate through unmask_client; the stream's steps, then the Completed event."""
    from unmask_client import UnmaskError  # on the path once bench_serving.py set it up
    kind, prompt = PROMPTS[req.prompt]
    args = ({"chat": [{"role": "user", "content": prompt}], "block_length": CHAT_BLOCK_LENGTH} if kind == "chat"
            else {"prompt": prompt})
    out = Outcome(req, "grpc", time.monotonic())
    try:
        with client.stream(model=p.model, gen_length=req.max_tokens, sampler=p.sampler,
                           temperature=p.temperature, **args) as s:
            try:
                for step in s:
                    if out.t_first is None and step.tokens:
                        out.t_first = time.monotonic()
                    out.unmasked.update(zip(step.positions, step.tokens))
            finally:
                out.job_id = s.job_id
            if s.result is None:
                out.kind, out.detail = "other", "the stream ended without a result"
            else:
                out.text, out.tokens = s.result.text, answer_tokens(out.unmasked, p.stop_ids)
    except UnmaskError as e:
        out.kind, out.detail = classify_grpc(e.code), str(e)[:300]
    return _ended(out)


def _ended(out: Outcome) -> Outcome:
    out.t_end = time.monotonic()
    return out


def run_closed(send, requests: List[Request], concurrency: int,
               deadline: Optional[float] = None) -> Tuple[List[Outcome], float]:
    """`concurrency` clients, each sending its next request as soon as its last one ended, until
    `requests` are all sent (or, with a deadline (time.monotonic()), until it passed). Returns the
    outcomes and the wall time (first send to last end)."""
    todo = list(reversed(requests))
    lock = threading.Lock()
    outcomes: List[Outcome] = []

    def client():
        while True:
            with lock:
                if not todo or (deadline is not None and time.monotonic() >= deadline):
                    return
                req = todo.pop()
            o = send(req)
            with lock:
                outcomes.append(o)

    start = time.monotonic()
    threads = [threading.Thread(target=client, daemon=True) for _ in range(concurrency)]
    for t in threads:
        t.start()
    _join(threads)
    return outcomes, time.monotonic() - start


def poisson_schedule(seed: int, rate: float, duration_s: float) -> List[float]:
    """Arrival offsets (seconds) of a Poisson process of `rate` per second over `duration_s`."""
    rng, t, out = random.Random(seed), 0.0, []
    while True:
        t += rng.expovariate(rate)
        if t >= duration_s:
            return out
        out.append(t)


def run_open(send, requests: List[Request], arrivals: List[float]) -> Tuple[List[Outcome], float]:
    """Request i sent at arrivals[i] whatever is still running (open loop); then waits for all."""
    outcomes: List[Outcome] = []
    lock = threading.Lock()

    def one(req):
        o = send(req)
        with lock:
            outcomes.append(o)

    threads = []
    start = time.monotonic()
    for req, at in zip(requests, arrivals):
        while (wait := start + at - time.monotonic()) > 0:  # short sleeps, as in _join (the wait read once:
            time.sleep(min(wait, 0.2))                         # read twice it could turn negative between)
        t = threading.Thread(target=one, args=(req,), daemon=True)
        t.start()
        threads.append(t)
    _join(threads)
    return outcomes, time.monotonic() - start


def _join(threads) -> None:
    """Joins in short waits: a Ctrl-C that lands on another thread is seen by the main thread only
    when it wakes up."""
    for t in threads:
        while t.is_alive():
            t.join(0.2)


def percentile(values: List[float], q: float) -> Optional[float]:
    """Linear interpolation between closest ranks (numpy's default); None for no values."""
    if not values:
        return None
    v = sorted(values)
    pos = (len(v) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


@dataclass
class Figures:
    requests: int
    ok: int
    errors: Dict[str, int]
    wall_s: float
    tokens_per_s: float
    requests_per_s: float
    ttft_p50: Optional[float]
    ttft_p99: Optional[float]
    latency_p50: Optional[float]
    latency_p99: Optional[float]
    details: List[str] = field(default_factory=list)  # a few error messages, one per kind


def figures(outcomes: List[Outcome], wall_s: float) -> Figures:
    good = [o for o in outcomes if o.ok]
    errors = {k: sum(1 for o in outcomes if o.kind == k) for k in ERROR_KINDS}
    details, seen = [], set()
    for o in outcomes:
        if not o.ok and o.kind not in seen:
            seen.add(o.kind)
            details.append(f"{o.kind}: {o.detail}")
    ttft = [(o.t_first if o.t_first is not None else o.t_end) - o.t_send for o in good]
    latency = [o.t_end - o.t_send for o in good]
    wall = max(wall_s, 1e-9)
    return Figures(len(outcomes), len(good), errors, wall_s, sum(o.tokens for o in good) / wall, len(good) / wall,
                   percentile(ttft, 50), percentile(ttft, 99), percentile(latency, 50), percentile(latency, 99),
                   details)


def mismatches(outcomes: List[Outcome], alone: Dict[Tuple[str, Tuple[int, int]], str]) -> List[Outcome]:
    """Answers whose text differs from the same request's text alone (same protocol)."""
    return [o for o in outcomes if o.ok and (o.protocol, o.request.key) in alone
            and o.text != alone[(o.protocol, o.request.key)]]
