// vLLM's `prompt_logprobs` body field through the official openai SDK against the real stack
// (openai_sdk_driver): each prompt token's log-probability, vLLM's rank and its alternatives,
// on /v1/completions (per choice) and /v1/chat/completions (on the response), the same values as
// completions' echo with logprobs gives, and refused with stream, as vLLM refuses it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const client = new OpenAI({ baseURL: `${process.env.UNMASK_HTTP_URL}/v1`, apiKey: 'x', maxRetries: 0, timeout: 120_000 });
const MODEL = 'unmask-kjv';
const PROMPT = 'In the beginning God created the heaven';

const rejection = (promise) => promise.then(() => assert.fail('accepted'), (e) => e);

// vLLM's shape: null first, then {id: {logprob, rank, decoded_token}} with the prompt's token and
// at most k alternatives, whose ranks count the tokens strictly more likely.
function checkShape(p, promptTokens, k) {
  assert.equal(p.length, promptTokens);
  assert.equal(p[0], null);
  for (let j = 1; j < p.length; ++j) {
    const entries = Object.values(p[j]);
    assert.ok(entries.length >= 1 && entries.length <= k + 1, JSON.stringify(p[j]));
    for (const e of entries) {
      assert.ok(typeof e.logprob === 'number' && e.logprob <= 0, JSON.stringify(e));
      assert.ok(Number.isInteger(e.rank) && e.rank >= 1, JSON.stringify(e));
      assert.equal(typeof e.decoded_token, 'string');
    }
    if (k === 0) continue;  // the prompt's token alone, at its own rank
    const best = Math.max(...entries.map((e) => e.logprob));  // the most likely alternative is kept
    for (const e of entries) if (e.logprob === best) assert.equal(e.rank, 1, JSON.stringify(p[j]));
  }
}

test('prompt_logprobs on completions: vLLM\'s shape, the values echo with logprobs gives', async () => {
  const r = await client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 2, prompt_logprobs: 2, echo: true, logprobs: 1 });
  const choice = r.choices[0];
  const n = r.usage.prompt_tokens;
  checkShape(choice.prompt_logprobs, n, 2);
  // The echoed prompt's logprobs (1 alternative) are the same tokens' values.
  for (let j = 1; j < n; ++j) {
    const token = choice.logprobs.tokens[j];
    const mine = Object.values(choice.prompt_logprobs[j]).filter((e) => e.decoded_token === token);
    assert.ok(mine.length >= 1, `${token} in ${JSON.stringify(choice.prompt_logprobs[j])}`);
    assert.ok(mine.some((e) => Math.abs(e.logprob - choice.logprobs.token_logprobs[j]) < 1e-9), `position ${j}`);
  }
  const none = await client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 2 });
  assert.ok(!('prompt_logprobs' in none.choices[0]), 'none unless asked');
});

test('prompt_logprobs on chat: on the response, over the chat template\'s tokens', async () => {
  const r = await client.chat.completions.create({
    model: MODEL, messages: [{ role: 'user', content: 'In the beginning' }], max_tokens: 2, prompt_logprobs: 0,
  });
  checkShape(r.prompt_logprobs, r.usage.prompt_tokens, 0);
  for (let j = 1; j < r.prompt_logprobs.length; ++j) assert.equal(Object.keys(r.prompt_logprobs[j]).length, 1);
  assert.ok(!('prompt_logprobs' in r.choices[0]));
});

test('prompt_logprobs refused by name: streamed, out of range, not an integer', async () => {
  for (const [body, chat] of [[{ prompt_logprobs: 1, stream: true }, false], [{ prompt_logprobs: 1, stream: true }, true],
    [{ prompt_logprobs: 21 }, false], [{ prompt_logprobs: '2' }, true]]) {
    const call = chat
      ? client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2, ...body })
      : client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 2, ...body });
    const err = await rejection(call);
    assert.equal(err.status, 400, JSON.stringify(body));
    assert.equal(err.param, 'prompt_logprobs', JSON.stringify(body));
  }
});
