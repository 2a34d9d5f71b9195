"""Recording the random draws and selections of the official Dream code, and checking the
identities between torch 1.13's draws that tests/data/dream-golden.md states, for
make_dream_golden.py: proxies for the official modules' `torch` and `dists` globals log every
rand, multinomial, topk and Categorical call of a step, and the log is split into steps."""

import contextlib

import torch

from dream_tokenizer import VOCAB_SIZE

# =============================================================================================
# Recording helpers.
# =============================================================================================

def sig(v, digits=7):
    return float(f"%.{digits}g" % v)


def sig_list(t, digits=7):
    return [sig(v, digits) for v in t.flatten().tolist()]


class TorchProxy:
    """Stands in for the `torch` global of one official module while recording the calls that
    decide the draws and selections; everything else is torch itself."""

    def __init__(self, log):
        self._log = log

    def __getattr__(self, name):
        return getattr(torch, name)

    def rand(self, *size, **kwargs):
        out = torch.rand(*size, **kwargs)
        self._log.append(("rand", out.numel()))
        return out

    def topk(self, input, k, *args, **kwargs):
        out = torch.topk(input, k, *args, **kwargs)
        k = int(k)
        tie = False
        if k > 0 and input.dim() >= 1:
            ordered = torch.sort(input, dim=-1, descending=True)[0]
            if 0 < k < ordered.shape[-1]:
                below, at = ordered[..., k], ordered[..., k - 1]
                tie = bool(((below == at) & torch.isfinite(at)).any())
        self._log.append(("topk", list(input.shape), k, tie))
        return out

    def multinomial(self, input, num_samples, *args, **kwargs):
        out = torch.multinomial(input, num_samples, *args, **kwargs)
        self._log.append(("multinomial", list(input.shape), int(num_samples)))
        return out


class DistsProxy:
    """Stands in for `torch.distributions` in one official module: records each Categorical
    (rows, and whether construction/sampling raised: the official code then falls back to argmax)."""

    def __init__(self, log):
        self._log = log

    def __getattr__(self, name):
        return getattr(torch.distributions, name)

    def Categorical(self, probs=None, logits=None):
        log = self._log
        rows = probs.numel() // probs.shape[-1]
        try:
            dist = torch.distributions.Categorical(probs=probs, logits=logits)
        except Exception:
            log.append(("categorical_fallback", rows, "constructor"))
            raise

        class Wrapped:
            def sample(self_inner, *args):
                try:
                    out = dist.sample(*args)
                except Exception:
                    log.append(("categorical_fallback", rows, "sample"))
                    raise
                log.append(("categorical", rows))
                return out
        return Wrapped()


@contextlib.contextmanager
def recording(module, model, sample_attr="sample_tokens"):
    """Patches module.torch, module.dists and module.<sample_attr>, and wraps model.forward; yields
    the event log. Events: ("forward", input_ids, kwargs), ("sample", logits_shape, confidence, x0),
    plus TorchProxy/DistsProxy events."""
    log = []
    saved = {k: getattr(module, k) for k in ("torch", "dists", sample_attr)}
    original_sample = saved[sample_attr]

    def sample(logits, *args, **kwargs):
        log.append(("sample_begin",))
        confidence, x0 = original_sample(logits, *args, **kwargs)
        log.append(("sample", list(logits.shape), confidence, x0))
        return confidence, x0

    original_forward = model.forward
    previous = model.__dict__.get("forward")

    def forward(input_ids, *args, **kwargs):
        log.append(("forward", input_ids.clone(), args, kwargs))
        return original_forward(input_ids, *args, **kwargs)

    module.torch, module.dists = TorchProxy(log), DistsProxy(log)
    setattr(module, sample_attr, sample)
    model.forward = forward
    try:
        yield log
    finally:
        for k, v in saved.items():
            setattr(module, k, v)
        if previous is None:
            del model.forward
        else:
            model.forward = previous


def split_steps(log):
    steps = []
    for event in log:
        if event[0] == "forward":
            steps.append([])
        steps[-1].append(event)
    return steps


def selections_of(events):
    """The topk / multinomial calls made after the step's sampling (top_k filtering inside
    sample_tokens also calls topk: those come before)."""
    after = [i for i, e in enumerate(events) if e[0] == "sample"]
    start = after[-1] + 1 if after else 0
    return [e for e in events[start:] if e[0] in ("topk", "multinomial")]


def draws_of(events):
    """The random draws of one step, in order."""
    out = []
    for e in events:
        if e[0] == "rand":
            out.append({"op": "rand_float32", "n": e[1]})
        elif e[0] == "categorical":
            out.append({"op": "categorical", "rows": e[1]})
        elif e[0] == "categorical_fallback":
            out.append({"op": "categorical_failed_argmax_fallback", "rows": e[1]})
        elif e[0] == "multinomial":
            out.append({"op": "multinomial_no_replacement", "shape": e[1], "k": e[2]})
    return out


# =============================================================================================
# Checks of the random-draw identities the documentation states.
# =============================================================================================

def inverse_cdf(probs, u):
    """torch 1.13's CPU multinomial with replacement (MultinomialKernel.cpp), one sample per row:
    cum = running sum of the row in float32, cum /= cum[-1] (float32), cum[-1] = 1, and the sample is
    the first index j with cum[j] >= u (binary search; u a double)."""
    out = []
    for r in range(probs.shape[0]):
        cum, total = [], torch.tensor(0.0)
        for v in probs[r]:
            total = total + v  # float32 + float32, sequential
            cum.append(total)
        cum = torch.stack(cum) / total
        cum[-1] = 1.0
        out.append(int((cum.double() < u[r]).sum()))
    return out


def check_draw_identities():
    p = torch.softmax(torch.randn(6, VOCAB_SIZE, generator=torch.Generator().manual_seed(1)) * 3, -1)
    # exponential_ (float32) = float32(-log(1 - u)), u = torch.rand(float64), element order row-major
    torch.manual_seed(77)
    u = torch.rand(p.shape, dtype=torch.float64)
    torch.manual_seed(77)
    q = torch.empty_like(p).exponential_(1)
    assert torch.equal(q, (-torch.log(1.0 - u)).float()), "exponential_ identity"
    # Categorical(probs).sample() = multinomial(probs / probs.sum(-1), 1, replacement=True): per row one
    # float64 u (torch.rand(rows, float64)), inverse CDF over the float32 running sum (see below)
    torch.manual_seed(78)
    s = torch.distributions.Categorical(probs=p).sample()
    after = torch.rand(3)
    torch.manual_seed(78)
    u = torch.rand(p.shape[0], dtype=torch.float64)
    assert torch.equal(torch.rand(3), after), "Categorical draws one double per row"
    assert s.tolist() == inverse_cdf(p / p.sum(-1, keepdim=True), u), "Categorical identity"
    # multinomial without replacement, k > 1 = topk(p / q, k) (torch's order), 1-D and 2-D
    w = torch.softmax(torch.randn(2, 20, generator=torch.Generator().manual_seed(2)), -1)
    for probs, k in ((w, 5), (w[0], 3), (w, 1)):
        torch.manual_seed(79)
        m = torch.multinomial(probs, k)
        torch.manual_seed(79)
        q = torch.empty_like(probs).exponential_(1)
        expect = torch.topk(probs / q, k).indices if k > 1 else torch.argmax(probs / q, -1, keepdim=True)
        assert torch.equal(m, expect), "multinomial identity"



RANDOM_DRAWS = {
    "seeding": "torch.manual_seed(seed) right before the call (CPU default generator).",
    "categorical": "sample_tokens with temperature > 0: Categorical(probs).sample() over probs [rows, V] float32 "
                   "= torch.multinomial(p_norm, 1, replacement=True), p_norm = probs / probs.sum(-1, keepdim=True). "
                   "torch 1.13 CPU: per row, in row order, one double u (the stream torch.rand(rows, "
                   "dtype=float64) draws); cum = sequential float32 running sum of the p_norm row, cum /= cum[-1] "
                   "(float32), cum[-1] = 1; the token is the first j with cum[j] >= u. (Checked by the script.)",
    "multinomial_no_replacement": "alg_temp > 0: torch.multinomial(softmax(full_confidence / alg_temp), k) "
                                  "(replacement=False) = topk(p / q, k).indices (k == 1: argmax(p / q)), "
                                  "q = empty_like(p).exponential_(1): one double u per element of p in row-major "
                                  "order (the torch.rand(float64) stream), q = float32(-log(1 - u)). (Checked.)",
    "origin_step": "torch.rand(n_masked) float32 over the masked positions of the whole batch in row-major "
                   "order (also on the last step, also with temperature 0); then, if temperature > 0, one "
                   "categorical over the transferred rows (none drawn when no row is transferred: "
                   "the empty Categorical raises and the code falls back to argmax of nothing).",
    "confidence_step": "maskgit_plus / topk_margin / entropy: if temperature > 0, one categorical over all masked "
                       "rows of the batch (row-major); then, if number_transfer_tokens > 0 and alg_temp > 0, one "
                       "multinomial_no_replacement over full_confidence [B, L]. Nothing else.",
}
