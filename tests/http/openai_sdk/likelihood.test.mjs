// unmask's `likelihood` extension of /v1/completions through the official openai SDK against the
// real stack (openai_sdk_driver): the official Monte Carlo estimate of a continuation given the
// prompt, as an evaluation harness would ask for it (a body field the SDK passes through; the
// Python SDK sends it with extra_body), and its refusals by name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const client = new OpenAI({ baseURL: `${process.env.UNMASK_HTTP_URL}/v1`, apiKey: 'x', maxRetries: 0, timeout: 120_000 });
const MODEL = 'unmask-kjv';
const CONTEXT = 'In the beginning God created the heaven';

async function likelihood(continuation, extra = {}) {
  const r = await client.completions.create({
    model: MODEL,
    prompt: CONTEXT,
    seed: 3,
    likelihood: { continuation, mc_num: 16, batch_size: 8, ...extra },
  });
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].text, '');
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage.completion_tokens, 0);
  return r;
}

test('likelihood: the estimate, its spread, and the true continuation above its words scrambled', async () => {
  const r = await likelihood(' and the earth.', { check_greedy: true });
  const l = r.choices[0].likelihood;
  assert.equal(typeof l.loglikelihood, 'number');
  assert.ok(l.loglikelihood < 0, JSON.stringify(l));
  assert.ok(l.standard_error >= 0, JSON.stringify(l));
  assert.equal(l.samples, 16);
  assert.equal(typeof l.is_greedy, 'boolean');
  assert.ok(l.continuation_tokens >= 3, JSON.stringify(l));
  assert.equal(r.usage.prompt_tokens, r.usage.total_tokens);
  const again = await likelihood(' and the earth.', { check_greedy: true });
  assert.equal(again.choices[0].likelihood.loglikelihood, l.loglikelihood, 'the same seed draws the same masks');
  const scrambled = (await likelihood(' earth the and.')).choices[0].likelihood;
  assert.ok(!('is_greedy' in scrambled), 'no greedy check unless asked');
  assert.ok(l.loglikelihood > scrambled.loglikelihood, `${l.loglikelihood} vs ${scrambled.loglikelihood}`);
});

test('likelihood: a prompt of token ids names its continuation by count', async () => {
  const r = await client.completions.create({
    model: MODEL,
    prompt: [1, 300, 301, 302, 303, 304],
    likelihood: { continuation_tokens: 2, mc_num: 4, batch_size: 2 },
  });
  assert.equal(r.choices[0].likelihood.continuation_tokens, 2);
  assert.equal(r.usage.prompt_tokens, 6);
  // Both samples of each draw in one forward (the scheduler fits them), or one a forward as asked.
  assert.equal(r.choices[0].likelihood.rows_per_forward, 2);
  assert.equal(r.choices[0].likelihood.forwards, 2);
  const one = await client.completions.create({
    model: MODEL,
    prompt: [1, 300, 301, 302, 303, 304],
    likelihood: { continuation_tokens: 2, mc_num: 4, batch_size: 2, rows_per_forward: 1 },
  });
  assert.equal(one.choices[0].likelihood.forwards, 4);
  const [a, b] = [one.choices[0].likelihood.loglikelihood, r.choices[0].likelihood.loglikelihood];
  assert.ok(Math.abs(a - b) <= 1e-5 * Math.abs(b), `${a} vs ${b}: the same estimate up to rounding`);
});

test('likelihood: every bad field is refused by name', async () => {
  const cases = [
    [{ likelihood: { mc_num: 10, batch_size: 4, continuation: ' x' } }, 'likelihood.batch_size'],
    [{ likelihood: { mc_num: 0, continuation: ' x' } }, 'likelihood.mc_num'],
    [{ likelihood: {} }, 'likelihood.continuation'],
    [{ likelihood: { continuation: '' } }, 'likelihood.continuation'],
    [{ likelihood: { continuation: ' x', continuation_tokens: 1 } }, 'likelihood.continuation_tokens'],
    [{ likelihood: { continuation: ' x', draws: 3 } }, 'likelihood.draws'],
    [{ likelihood: { continuation: ' x', check_greedy: 'yes' } }, 'likelihood.check_greedy'],
    [{ likelihood: { continuation: ' x', batch_size: 4, mc_num: 8, rows_per_forward: 5 } }, 'likelihood.rows_per_forward'],
    [{ likelihood: 'x' }, 'likelihood'],
    [{ likelihood: { continuation: ' x' }, max_tokens: 4 }, 'max_tokens'],
    [{ likelihood: { continuation: ' x' }, echo: true }, 'echo'],
    [{ likelihood: { continuation: ' x' }, logprobs: 0 }, 'logprobs'],
    [{ likelihood: { continuation: ' x' }, stream: true }, 'stream'],
    [{ likelihood: { continuation: ' x' }, suffix: ' y' }, 'suffix'],
    [{ likelihood: { continuation: ' x' }, n: 2 }, 'n'],
  ];
  for (const [body, field] of cases) {
    const err = await client.completions.create({ model: MODEL, prompt: CONTEXT, ...body }).then(
      () => assert.fail(`${JSON.stringify(body)} was accepted`),
      (e) => e,
    );
    assert.equal(err.status, 400, `${JSON.stringify(body)}: ${err.message}`);
    assert.equal(err.error?.param, field, `${JSON.stringify(body)}: ${JSON.stringify(err.error)}`);
  }
  const chat = await client.chat.completions
    .create({ model: MODEL, messages: [{ role: 'user', content: 'Amen' }], likelihood: { continuation: ' x' } })
    .then(() => assert.fail('chat took likelihood'), (e) => e);
  assert.equal(chat.status, 400);
  assert.equal(chat.error?.param, 'likelihood');
});
