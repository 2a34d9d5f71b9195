"""A typed wrapper over the generated stubs (unmask/v1/*_pb2*.py, generated at build time)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import grpc

from unmask.v1 import generation_pb2, scheduler_pb2, scheduler_pb2_grpc

# GenerateRequest fields that are not GenerationParams (the rest of **params go to params).
_REQUEST_FIELDS = ("priority", "deadline_seconds", "idempotency_key", "partial_text", "n", "suffix", "template_text",
                   "continuation")
_REMASKING = {
    "low_confidence": generation_pb2.REMASKING_LOW_CONFIDENCE,
    "random": generation_pb2.REMASKING_RANDOM,
}

Message = Union[Mapping[str, Any], Tuple[str, str]]


class UnmaskError(Exception):
    """A call the scheduler refused or a job that failed: `code` is the grpc.StatusCode."""

    def __init__(self, code: grpc.StatusCode, message: str, job_id: str = ""):
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message
        self.job_id = job_id


@dataclass
class Adjustment:
    """A request field the scheduler changed to fit memory."""
    field: str
    asked: str
    applied: str
    reason: str


@dataclass
class Accepted:
    job_id: str
    params: Dict[str, Any]  # the parameters that run, after defaults and the memory clamp
    adjustments: List[Adjustment]
    prompt_tokens: int
    duplicate: bool
    job_ids: List[str] = field(default_factory=list)  # n > 1: every choice's job, by index


@dataclass
class TopLogprob:
    """One of the most likely tokens at a step: its id and log-probability."""
    token: int
    logprob: float


@dataclass
class TokenLogprob:
    """A generated token's log-probability (logprobs=k): `position` is 0-based after the prompt,
    `top` the k most likely tokens at the step that committed it, most likely first. A prompt
    token's (prompt_logprobs=k): `position` is its index in the prompt, `top` the k most likely
    tokens there given the tokens before it. `rank`: the token's rank in the vocabulary, vLLM's
    (1 + the tokens strictly more likely; 0 where unknown)."""
    position: int
    token: int
    logprob: float
    top: List[TopLogprob] = field(default_factory=list)
    rank: int = 0


@dataclass
class Step:
    """One diffusion step: the positions (0-based after the prompt) unmasked and their tokens."""
    step: int
    block: int
    step_in_block: int
    positions: List[int]
    tokens: List[int]
    elapsed_seconds: float
    partial_text: str  # only when asked for (partial_text=True); masks shown as "_"
    index: int = 0  # the choice (n > 1)
    logprobs: List[TokenLogprob] = field(default_factory=list)  # with logprobs=k: one per position
    # With prompt_logprobs=k, on the first step only: the prompt's tokens from the second on.
    prompt_logprobs: List[TokenLogprob] = field(default_factory=list)


@dataclass
class ToolCall:
    """A call of one of the request's tools the model made: `arguments` is a JSON object (text)."""
    id: str
    name: str
    arguments: str


@dataclass
class Likelihood:
    """A Monte Carlo estimate of log p(continuation | context) (Client.loglikelihood): the mean
    over `samples` draws, its `standard_error` (0 with one draw), and with check_greedy whether
    greedy unmasking of the continuation from the context gives it (`greedy`, None when not asked
    for): lm-evaluation-harness's (loglikelihood, is_greedy). `forwards`: the model forwards it
    took, of at most `rows_per_forward` samples each."""
    loglikelihood: float
    standard_error: float
    greedy: Optional[bool]
    samples: int
    continuation_tokens: int
    forwards: int = 0
    rows_per_forward: int = 0


@dataclass
class Result:
    job_id: str
    text: str
    finish_reason: str  # "length" or "eos" (or a stop)
    ids: List[int]
    sampler: str = ""
    queued_seconds: float = 0.0
    running_seconds: float = 0.0
    steps_run: int = 0
    accepted: Optional[Accepted] = None
    # With logprobs=k: every generated token (a template's holes only), in position order.
    logprobs: List[TokenLogprob] = field(default_factory=list)
    # Chat with tools: the calls read from the output, and content the text before the first
    # (empty when none; text is the output as generated).
    tool_calls: List[ToolCall] = field(default_factory=list)
    content: str = ""
    # With prompt_logprobs=k: each prompt token from the second on, given the tokens before it.
    prompt_logprobs: List[TokenLogprob] = field(default_factory=list)
    # A likelihood job's estimate (Client.loglikelihood; text and ids are then empty).
    likelihood: Optional[Likelihood] = None


@dataclass
class Job:
    job_id: str
    model: str
    state: str  # queued, running, succeeded, failed, cancelled, expired, dead
    executor: str
    attempts: int
    result: Optional[Result] = None
    error: Optional[UnmaskError] = None


def _params_dict(p: generation_pb2.GenerationParams) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for f, value in p.ListFields():
        if f.name == "remasking":
            value = generation_pb2.Remasking.Name(value).lower().replace("remasking_", "", 1)  # as build_request takes it
        elif f.name == "likelihood":
            value = {g.name: v for g, v in value.ListFields()}  # the fields set (0 = the default)
        out[f.name] = value
    return out


def _accepted(job_id: str, a: scheduler_pb2.Accepted) -> Accepted:
    return Accepted(job_id, _params_dict(a.params),
                    [Adjustment(x.field, x.asked, x.applied, x.reason) for x in a.adjustments],
                    a.prompt_tokens, a.duplicate, list(a.job_ids))


def _logprobs(entries: Iterable[Any]) -> List[TokenLogprob]:
    return [TokenLogprob(e.position, e.token, e.logprob, [TopLogprob(t.token, t.logprob) for t in e.top], e.rank)
            for e in entries]


def _likelihood(l: generation_pb2.LikelihoodResult) -> Likelihood:
    return Likelihood(l.loglikelihood, l.standard_error, l.greedy if l.HasField("greedy") else None, l.samples,
                      l.continuation_tokens, l.forwards, l.rows_per_forward)


def _result(job_id: str, c: scheduler_pb2.Completed, accepted: Optional[Accepted] = None) -> Result:
    return Result(job_id, c.text, c.finish_reason, list(c.ids), c.sampler, c.timings.queued_seconds,
                  c.timings.running_seconds, len(c.timings.step_seconds), accepted, _logprobs(c.logprobs),
                  [ToolCall(t.id, t.name, t.arguments) for t in c.tool_calls], c.content,
                  _logprobs(c.prompt_logprobs),
                  _likelihood(c.likelihood) if c.HasField("likelihood") else None)


def _failed(job_id: str, f: scheduler_pb2.Failed) -> UnmaskError:
    try:
        code = next(c for c in grpc.StatusCode if c.value[0] == f.code)
    except StopIteration:
        code = grpc.StatusCode.UNKNOWN
    return UnmaskError(code, f.message, job_id)


def _set_likelihood(target: generation_pb2.Likelihood, value: Any) -> None:
    """params.likelihood from a generation_pb2.Likelihood or a dict of its fields
    (continuation_tokens, mc_num, batch_size, check_greedy, rows_per_forward); present even when all
    are defaults."""
    if isinstance(value, generation_pb2.Likelihood):
        target.CopyFrom(value)
    elif isinstance(value, Mapping):
        known = generation_pb2.Likelihood.DESCRIPTOR.fields_by_name
        for name, v in value.items():
            if name not in known:
                raise TypeError(f"likelihood: unknown field {name!r} ({', '.join(known)})")
            if v is None:
                continue
            if name == "check_greedy":
                if not isinstance(v, bool):
                    raise TypeError(f"check_greedy: a bool, not {type(v).__name__}")
            elif isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"{name}: an int, not {type(v).__name__}")
            try:
                setattr(target, name, v)
            except (TypeError, ValueError) as e:
                raise TypeError(f"{name}: {e}") from None
    else:
        raise TypeError(f"likelihood: a dict of its fields or a generation_pb2.Likelihood, not {type(value).__name__}")
    target.SetInParent()


def _json_object_text(value: Any, where: str) -> str:
    """A JSON object given as a dict or as its text, as text."""
    if isinstance(value, Mapping):
        return json.dumps(value)
    if isinstance(value, str):
        return value
    raise TypeError(f"{where}: a dict or its JSON text, not {type(value).__name__}")


def _tool_call(c: Any) -> scheduler_pb2.ToolCall:
    """An earlier call, in OpenAI's shape ({"id", "type": "function", "function": {"name",
    "arguments"}}) or as a ToolCall."""
    if isinstance(c, ToolCall):
        return scheduler_pb2.ToolCall(id=c.id, name=c.name, arguments=c.arguments)
    if not isinstance(c, Mapping) or not isinstance(c.get("function"), Mapping):
        raise TypeError("tool_calls: each is a ToolCall or {'id', 'type': 'function', 'function': {'name', 'arguments'}}")
    f = c["function"]
    return scheduler_pb2.ToolCall(id=c.get("id", ""), name=f.get("name", ""),
                                  arguments=_json_object_text(f.get("arguments", {}), "tool_calls arguments"))


def _message(m: Message) -> scheduler_pb2.ChatMessage:
    tool_calls: Sequence[Any] = ()
    tool_call_id = ""
    if isinstance(m, tuple):
        if len(m) != 2:
            raise TypeError(f"a chat message tuple is (role, content), got {len(m)} items")
        role, content = m
    elif isinstance(m, Mapping):
        unknown = set(m) - {"role", "content", "tool_calls", "tool_call_id"}
        if unknown:
            raise TypeError(f"chat message: unknown keys {sorted(unknown)} (role, content, tool_calls, tool_call_id)")
        role, content = m.get("role", ""), m.get("content") or ""
        tool_calls, tool_call_id = m.get("tool_calls") or (), m.get("tool_call_id", "")
    else:
        raise TypeError(f"a chat message is a dict or a (role, content) tuple, not {type(m).__name__}")
    if not isinstance(role, str) or not isinstance(content, str) or not isinstance(tool_call_id, str):
        raise TypeError("chat message: role, content and tool_call_id are strings")
    return scheduler_pb2.ChatMessage(role=role, content=content, tool_calls=[_tool_call(c) for c in tool_calls],
                                     tool_call_id=tool_call_id)


def _tool(t: Any) -> scheduler_pb2.Tool:
    """OpenAI's {"type": "function", "function": {"name", "description", "parameters"}}."""
    if not isinstance(t, Mapping) or t.get("type") != "function" or not isinstance(t.get("function"), Mapping):
        raise TypeError("tools: each is {'type': 'function', 'function': {'name', 'description', 'parameters'}}")
    f = t["function"]
    parameters = f.get("parameters")
    return scheduler_pb2.Tool(name=f.get("name", ""), description=f.get("description", ""),
                              parameters="" if parameters is None else _json_object_text(parameters, "tools parameters"))


def _set_tools(r: scheduler_pb2.GenerateRequest, tools: Optional[Sequence[Any]], tool_choice: Optional[str],
               parallel_tool_calls: Optional[bool]) -> None:
    if tools is None and tool_choice is None and parallel_tool_calls is None:
        return
    if not r.HasField("chat"):
        raise TypeError("tools, tool_choice and parallel_tool_calls go with chat")
    if tools is not None:
        r.chat.tools.extend(_tool(t) for t in tools)
    if tool_choice is not None:
        if not isinstance(tool_choice, str):
            raise TypeError("tool_choice: 'auto', 'none', 'required' or a tool's name")
        r.chat.tool_choice = tool_choice
    if parallel_tool_calls is not None:
        r.chat.single_tool_call = not parallel_tool_calls


def build_request(model: str, prompt: Optional[str] = None, *, chat: Optional[Sequence[Message]] = None,
                  ids: Optional[Iterable[int]] = None, tools: Optional[Sequence[Any]] = None,
                  tool_choice: Optional[str] = None, parallel_tool_calls: Optional[bool] = None,
                  **params: Any) -> scheduler_pb2.GenerateRequest:
    """A GenerateRequest from keyword arguments. Exactly one of prompt (text), chat or ids.

    chat: messages as (role, content) tuples or dicts with role, content, and OpenAI's tool_calls
    (an assistant's earlier calls) and tool_call_id (a tool's answer). With chat, tools (OpenAI's
    tool objects), tool_choice ('auto', 'none', 'required' or a tool's name) and
    parallel_tool_calls (False: at most one call): Result.tool_calls holds the calls read back.

    params: any GenerationParams field (gen_length, block_length, steps, temperature, cfg_scale,
    remasking ("low_confidence" | "random"), sampler, threshold, factor, seed, stop_at_eos, logprobs,
    prompt_logprobs,
    llada2's minimal_topk, top_k, top_p, eos_early_stop, dream's alg, alg_temp, eps, likelihood
    (a dict of continuation_tokens, mc_num, batch_size, check_greedy; see Client.loglikelihood), ...)
    and the request's priority, deadline_seconds, idempotency_key, partial_text, n, suffix,
    template_text, continuation. An unknown
    name or a value of the wrong type raises TypeError here; values out of range are the
    scheduler's to refuse (UnmaskError with INVALID_ARGUMENT naming the field).
    """
    if not isinstance(model, str) or not model:
        raise TypeError("model: a non-empty string is required")
    given = [name for name, v in (("prompt", prompt), ("chat", chat), ("ids", ids)) if v is not None]
    if len(given) != 1:
        raise TypeError(f"give exactly one of prompt, chat, ids (got {', '.join(given) or 'none'})")
    r = scheduler_pb2.GenerateRequest(model=model)
    if prompt is not None:
        if not isinstance(prompt, str):
            raise TypeError(f"prompt: a string, not {type(prompt).__name__} (token ids go in ids=)")
        r.text = prompt
    elif chat is not None:
        if isinstance(chat, (str, bytes)):
            raise TypeError("chat: a list of messages, not a string")
        r.chat.messages.extend(_message(m) for m in chat)
        if not r.chat.messages:
            raise TypeError("chat: at least one message")
    else:
        r.ids.ids.extend(ids)  # raises TypeError for non-integers
        if not r.ids.ids:
            raise TypeError("ids: at least one token id")
    _set_tools(r, tools, tool_choice, parallel_tool_calls)
    known = generation_pb2.GenerationParams.DESCRIPTOR.fields_by_name
    for name, value in params.items():
        if value is None:
            continue
        try:
            if name in ("logprobs", "prompt_logprobs") and isinstance(value, bool):
                raise TypeError(f"{name}: the number of alternatives per token, 0..20 (an int, not a bool)")
            if name in _REQUEST_FIELDS:
                setattr(r, name, value)
            elif name == "likelihood":
                _set_likelihood(r.params.likelihood, value)
            elif name == "remasking":
                if value not in _REMASKING:
                    raise TypeError(f"remasking: {value!r} is not one of {sorted(_REMASKING)}")
                r.params.remasking = _REMASKING[value]
            elif name in known:
                setattr(r.params, name, value)
            else:
                raise TypeError(f"unknown parameter {name!r} (GenerationParams fields: "
                                f"{', '.join(sorted(known))}; request: {', '.join(_REQUEST_FIELDS)})")
        except (TypeError, ValueError) as e:
            if str(e).startswith((name + ":", "unknown parameter")):
                raise TypeError(str(e)) from None
            raise TypeError(f"{name}: {e}") from None
    return r


class GenerationStream:
    """The events of one generation: iterate for each diffusion Step. `job_id` and `accepted`
    are set once the scheduler accepted it, `result` once it completed; a failed job raises
    UnmaskError from the iteration. Closing it (or leaving a `with` block) cancels the call,
    and with it a job still running.

    With n > 1 the steps of every choice come interleaved (Step.index says whose); `results`
    and `errors` hold each choice's Result or UnmaskError by index as they end (a failed choice
    does not end the others), and `accepted`, `job_id` and `result` are choice 0's."""

    def __init__(self, call: Any):
        self._call = call
        self.job_id = ""
        self.accepted: Optional[Accepted] = None
        self.result: Optional[Result] = None
        self.results: Dict[int, Result] = {}
        self.errors: Dict[int, UnmaskError] = {}
        self._accepted_by_index: Dict[int, Accepted] = {}
        self._choices = 1

    def __iter__(self) -> Iterator[Step]:
        try:
            for ev in self._call:
                if ev.job_id and ev.index == 0:
                    self.job_id = ev.job_id
                kind = ev.WhichOneof("event")
                job_id = ev.job_id or self.job_id
                if kind == "accepted":
                    self._accepted_by_index[ev.index] = _accepted(job_id, ev.accepted)
                    self.accepted = self._accepted_by_index.get(0)
                    self._choices = max(1, len(ev.accepted.job_ids))
                elif kind == "step":
                    s = ev.step
                    yield Step(s.step, s.block, s.step_in_block, list(s.unmasked.positions), list(s.unmasked.tokens),
                               s.elapsed_seconds, s.partial_text, ev.index, _logprobs(s.logprobs),
                               _logprobs(s.prompt_logprobs))
                elif kind == "completed":
                    self.results[ev.index] = _result(job_id, ev.completed, self._accepted_by_index.get(ev.index))
                    self.result = self.results.get(0)
                elif kind == "failed":
                    self.errors[ev.index] = _failed(job_id, ev.failed)
                    if self._choices == 1:
                        raise self.errors[ev.index]
        except grpc.RpcError as e:
            raise UnmaskError(e.code(), e.details() or "", self.job_id) from None

    def wait(self) -> Result:
        """Reads the rest of the stream and returns the result."""
        for _ in self:
            pass
        if self.result is None:
            raise UnmaskError(grpc.StatusCode.UNKNOWN, "the stream ended without a result", self.job_id)
        return self.result

    def wait_all(self) -> List[Result]:
        """Reads the rest of the stream and returns every choice's Result, by index; raises the
        UnmaskError of the first choice that failed, if one did."""
        for _ in self:
            pass
        if self.errors:
            raise self.errors[min(self.errors)]
        if sorted(self.results) != list(range(self._choices)):
            raise UnmaskError(grpc.StatusCode.UNKNOWN, "the stream ended without every choice's result", self.job_id)
        return [self.results[i] for i in range(self._choices)]

    def close(self) -> None:
        self._call.cancel()

    def __enter__(self) -> "GenerationStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _read_pem(argument: str, path: Optional[str]) -> Optional[bytes]:
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ValueError(f"{argument} {path}: cannot read it: {e.strerror}") from None
    if b"-----BEGIN " not in data:
        raise ValueError(f"{argument} {path}: no PEM block in it (expected '-----BEGIN ...-----')")
    return data


def tls_channel(target: str, tls_ca: Optional[str] = None, tls_cert: Optional[str] = None,
                tls_key: Optional[str] = None, tls_server_name: Optional[str] = None) -> grpc.Channel:
    """A TLS channel to target, like the CLI's --tls-ca/--tls-cert/--tls-key/--tls-server-name:
    tls_ca is the PEM file of the CA the server's certificate must chain to (None: the system's
    roots); tls_cert and tls_key, this client's certificate for servers that require one
    (mutual TLS); tls_server_name, the name the server's certificate must carry when it is not
    the target's host."""
    if (tls_cert is None) != (tls_key is None):
        raise ValueError("tls_cert and tls_key: give both or neither")
    credentials = grpc.ssl_channel_credentials(root_certificates=_read_pem("tls_ca", tls_ca),
                                               private_key=_read_pem("tls_key", tls_key),
                                               certificate_chain=_read_pem("tls_cert", tls_cert))
    options = [("grpc.ssl_target_name_override", tls_server_name)] if tls_server_name else []
    return grpc.secure_channel(target, credentials, options=options)


class Client:
    """A connection to an unmask scheduler (gRPC). api_key is sent as 'authorization: Bearer
    <key>' on every call; timeout (seconds) bounds each call, None = no deadline.
    Plaintext unless tls=True or a tls_* argument is given (see tls_channel)."""

    def __init__(self, target: str = "127.0.0.1:50051", api_key: Optional[str] = None,
                 timeout: Optional[float] = None, channel: Optional[grpc.Channel] = None, *,
                 tls: bool = False, tls_ca: Optional[str] = None, tls_cert: Optional[str] = None,
                 tls_key: Optional[str] = None, tls_server_name: Optional[str] = None):
        if api_key is not None and (not isinstance(api_key, str) or not api_key or any(c.isspace() for c in api_key)):
            raise ValueError("api_key: a non-empty string without whitespace")
        wants_tls = tls or any(a is not None for a in (tls_ca, tls_cert, tls_key, tls_server_name))
        if channel is not None and wants_tls:
            raise ValueError("channel: give either a channel or tls arguments, not both")
        if wants_tls:
            channel = tls_channel(target, tls_ca, tls_cert, tls_key, tls_server_name)
        self._channel = channel or grpc.insecure_channel(target)
        self._stub = scheduler_pb2_grpc.SchedulerStub(self._channel)
        self._metadata = (("authorization", f"Bearer {api_key}"),) if api_key else ()
        self._timeout = timeout

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _unary(self, method: Any, request: Any) -> Any:
        try:
            return method(request, metadata=self._metadata, timeout=self._timeout)
        except grpc.RpcError as e:
            raise UnmaskError(e.code(), e.details() or "") from None

    def stream(self, prompt: Optional[str] = None, *, model: str, chat: Optional[Sequence[Message]] = None,
               ids: Optional[Iterable[int]] = None, **params: Any) -> GenerationStream:
        """Starts a generation; iterate the returned stream for each diffusion Step."""
        request = build_request(model, prompt, chat=chat, ids=ids, **params)
        return GenerationStream(self._stub.Generate(request, metadata=self._metadata, timeout=self._timeout))

    def generate(self, prompt: Optional[str] = None, *, model: str, chat: Optional[Sequence[Message]] = None,
                 ids: Optional[Iterable[int]] = None, logprobs: Optional[int] = None, **params: Any) -> Result:
        """Generates and returns the Result (text, finish_reason, ids, ...). logprobs=k (0..20):
        Result.logprobs holds every generated token's TokenLogprob with its k most likely
        alternatives."""
        with self.stream(prompt, model=model, chat=chat, ids=ids, logprobs=logprobs, **params) as s:
            return s.wait()

    def infill(self, prompt: str, suffix: str, gen_length: Optional[int] = None, *, model: str,
               logprobs: Optional[int] = None, **params: Any) -> Result:
        """Fills the gap between prompt and suffix (OpenAI's `suffix`): the model sees both and
        generates gen_length tokens between them (None: the server's default). Result.text is the
        gap's text only; with stop_at_eos=True the gap ends at the first EOS / EoT."""
        if not isinstance(suffix, str):
            raise TypeError(f"suffix: a string, not {type(suffix).__name__}")
        if not suffix:
            raise ValueError("suffix: must not be empty (without one, infill is generate)")
        return self.generate(prompt, model=model, suffix=suffix, gen_length=gen_length, logprobs=logprobs, **params)

    def fill_template(self, template: str, prompt: str, *, model: str, logprobs: Optional[int] = None,
                      **params: Any) -> Result:
        """Fills the holes of a template: each "<hole:N>" marker (N tokens, 1..4096; "<<hole:" is a
        literal "<hole:") is generated, the rest of the text is kept token for token. gen_length
        is the template's length in tokens (set by the server; one given must equal it).
        Result.text is the whole template, filled; with logprobs, Result.logprobs covers the holes.
        prompt is the context the template follows (the server refuses an empty text prompt)."""
        if not isinstance(template, str):
            raise TypeError(f"template: a string, not {type(template).__name__}")
        if not template:
            raise ValueError("template: must not be empty (mark each hole with <hole:N>)")
        if not prompt:
            raise ValueError("prompt: must not be empty (the context the template follows)")
        return self.generate(prompt, model=model, template_text=template, logprobs=logprobs, **params)

    def loglikelihood(self, context: str, continuation: str, *, model: str, mc_num: Optional[int] = None,
                      batch_size: Optional[int] = None, check_greedy: bool = False,
                      rows_per_forward: Optional[int] = None, **params: Any) -> Result:
        """Estimates log p(continuation | context) and generates nothing: lm-evaluation-harness's
        loglikelihood request, whose answer is (loglikelihood, is_greedy). Result.likelihood holds
        the estimate (Likelihood: loglikelihood, standard_error, greedy, samples,
        continuation_tokens); Result.text and Result.ids are empty and the stream has no steps.

        The estimate is the official one: on LLaDA and LLaDA-MoE it equals ML-GSAI/LLaDA's
        get_log_likelihood() for the same seed (its draws are torch's generator after
        torch.manual_seed(seed); cfg_scale is its guidance), and on Dream models it is dllm's
        DreamEvalHarness Monte Carlo estimator (nll_type mc); LLaDA2 models refuse it. The text is
        encoded as the evaluation code encodes a pair (the context's trailing spaces move to the
        continuation). mc_num: rows drawn in all (None: 128), a multiple of batch_size (None: 16),
        which the estimate depends on as officially; check_greedy: also whether greedy unmasking
        of the continuation from the context gives it (Likelihood.greedy; not on Dream);
        rows_per_forward: samples one forward runs, at most batch_size (None: as many as the
        scheduler's memory clamp allows; the same estimate up to rounding).
        params: seed, cfg_scale, prompt_logprobs, priority, ... (gen_length, block_length, steps,
        logprobs, suffix and n are refused: UnmaskError, INVALID_ARGUMENT naming the field)."""
        if not isinstance(context, str):
            raise TypeError(f"context: a string, not {type(context).__name__} (token ids: loglikelihood_ids)")
        if not isinstance(continuation, str):
            raise TypeError(f"continuation: a string, not {type(continuation).__name__}")
        likelihood = {"mc_num": mc_num, "batch_size": batch_size, "check_greedy": check_greedy,
                      "rows_per_forward": rows_per_forward}
        return self.generate(context, model=model, continuation=continuation, likelihood=likelihood, **params)

    def loglikelihood_ids(self, ids: Sequence[int], continuation_tokens: int, *, model: str,
                          mc_num: Optional[int] = None, batch_size: Optional[int] = None, check_greedy: bool = False,
                          rows_per_forward: Optional[int] = None, **params: Any) -> Result:
        """loglikelihood() on token ids: the last continuation_tokens of ids (>= 1) are the
        continuation, the ids before them the context. Same estimate, same Result.likelihood."""
        if isinstance(ids, (str, bytes)):
            raise TypeError("ids: a sequence of token ids, not a string (text: loglikelihood)")
        if isinstance(continuation_tokens, bool) or not isinstance(continuation_tokens, int):
            raise TypeError(f"continuation_tokens: an int, not {type(continuation_tokens).__name__}")
        likelihood = {"continuation_tokens": continuation_tokens, "mc_num": mc_num, "batch_size": batch_size,
                      "check_greedy": check_greedy, "rows_per_forward": rows_per_forward}
        return self.generate(model=model, ids=ids, likelihood=likelihood, **params)

    def choices(self, prompt: Optional[str] = None, *, model: str, n: int, chat: Optional[Sequence[Message]] = None,
                ids: Optional[Iterable[int]] = None, **params: Any) -> List[Result]:
        """n samples of the prompt (jobs with seeds seed, seed + 1, ...): their Results by index.
        Raises the UnmaskError of the first choice that failed, once every choice has ended."""
        with self.stream(prompt, model=model, chat=chat, ids=ids, n=n, **params) as s:
            return s.wait_all()

    def chat(self, messages: Sequence[Message], *, model: str, **params: Any) -> Result:
        """generate() with messages in the model's chat template."""
        return self.generate(model=model, chat=messages, **params)

    def submit(self, prompt: Optional[str] = None, *, model: str, chat: Optional[Sequence[Message]] = None,
               ids: Optional[Iterable[int]] = None, **params: Any) -> Accepted:
        """Queues a generation and returns at once (its job_id is in the Accepted)."""
        resp = self._unary(self._stub.Submit, build_request(model, prompt, chat=chat, ids=ids, **params))
        return _accepted(resp.job_id, resp.accepted)

    def watch(self, job_id: str) -> GenerationStream:
        """The events of an existing job (past ones first), from any scheduler replica."""
        if not job_id:
            raise ValueError("job_id: must not be empty")
        return GenerationStream(self._stub.Watch(scheduler_pb2.WatchRequest(job_id=job_id),
                                                 metadata=self._metadata, timeout=self._timeout))

    def job(self, job_id: str) -> Job:
        info = self._unary(self._stub.GetJob, scheduler_pb2.GetJobRequest(job_id=job_id))
        return Job(info.job_id, info.model, info.state, info.executor, info.attempts,
                   _result(info.job_id, info.result) if info.HasField("result") else None,
                   _failed(info.job_id, info.error) if info.HasField("error") else None)

    def cancel(self, job_id: str) -> str:
        """Cancels a queued or running job; returns its state."""
        return self._unary(self._stub.CancelJob, scheduler_pb2.CancelJobRequest(job_id=job_id)).state

    def jobs(self, state: str = "", limit: int = 0) -> List[Job]:
        resp = self._unary(self._stub.ListJobs, scheduler_pb2.ListJobsRequest(state=state, limit=limit))
        return [Job(j.job_id, j.model, j.state, j.executor, j.attempts) for j in resp.jobs]

    def models(self) -> List[str]:
        return [m.model for m in self._unary(self._stub.ListModels, scheduler_pb2.ListServedModelsRequest()).models]
