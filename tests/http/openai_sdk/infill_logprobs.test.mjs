// Issue 31 through the official openai SDK against the real stack (openai_sdk_driver): infilling
// (`suffix`), `echo`, `logprobs` on both endpoints, whole and streamed, and unmask's `template`
// extension (a body field; the Python SDK sends it with extra_body), and their refusals.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const client = new OpenAI({ baseURL: `${process.env.UNMASK_HTTP_URL}/v1`, apiKey: 'x', maxRetries: 0, timeout: 120_000 });
const MODEL = 'unmask-kjv';
const PROMPT = 'And God said unto Moses,';
const COMPLETION = { model: MODEL, prompt: PROMPT, max_tokens: 16, block_length: 16, steps: 16 }; // greedy
const CHAT = {
  model: MODEL,
  messages: [{ role: 'user', content: 'What does John 3:16 say?' }],
  max_tokens: 64,
  block_length: 8,
  steps: 64,
};
const EPS = 1e-6;

async function rejection(promise) {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  assert.fail('the request was expected to fail');
}

// JS objects list integer-like keys ("7") first whatever the JSON order: only other keys can
// show the server's order.
const ordered = (top) => Object.keys(top).every((k) => !/^(0|[1-9]\d*)$/.test(k));

// Completions logprobs: one entry per token in every list, each token at its text_offset, the
// chosen token the most likely (greedy; not the first `given` tokens: an echoed prompt's) and
// equal to its own entry in top_logprobs.
function checkCompletionLogprobs(text, lp, k, { nullFirst = 0, given = 0 } = {}) {
  const n = lp.tokens.length;
  assert.ok(n > 0, JSON.stringify(lp));
  for (const key of ['token_logprobs', 'top_logprobs', 'text_offset']) assert.equal(lp[key].length, n, key);
  for (let i = 0; i < n; ++i) {
    const token = lp.tokens[i];
    assert.ok(text.startsWith(token, lp.text_offset[i]), `token ${i} ${JSON.stringify(token)} is not at ${lp.text_offset[i]} of ${JSON.stringify(text)}`);
    if (i < nullFirst) {
      assert.equal(lp.token_logprobs[i], null, `token ${i} has no logprob`);
      assert.equal(lp.top_logprobs[i], null);
      continue;
    }
    const logprob = lp.token_logprobs[i];
    assert.equal(typeof logprob, 'number', `token ${i}: ${JSON.stringify(lp.token_logprobs)}`);
    assert.ok(logprob <= 0, `token ${i}: logprob ${logprob} > 0`);
    const top = lp.top_logprobs[i];
    const values = Object.values(top);
    assert.ok(values.length <= k && values.length >= 1, `token ${i}: ${JSON.stringify(top)}`);
    for (const v of values) assert.ok(v <= 0 && (i < given || logprob >= v - EPS), `token ${i}: greedy chose ${logprob}, but ${JSON.stringify(top)}`);
    if (ordered(top)) {
      for (let j = 1; j < values.length; ++j) assert.ok(values[j - 1] >= values[j], `token ${i}: not sorted: ${JSON.stringify(top)}`);
    }
    if (token in top) assert.ok(Math.abs(top[token] - logprob) < EPS, `token ${i}: ${logprob} vs ${JSON.stringify(top)}`);
  }
  assert.equal(lp.text_offset[0], 0);
}

test('suffix: only the gap comes back, not the suffix; streamed the same', async () => {
  const suffix = ' and Moses went up unto God.';
  const request = { ...COMPLETION, max_tokens: 8, block_length: 8, steps: 8, suffix };
  const whole = await client.completions.create(request);
  const text = whole.choices[0].text;
  assert.ok(text.trim().length > 0, `empty gap: ${JSON.stringify(whole.choices[0])}`);
  assert.ok(!text.includes(suffix.trim()), text);
  assert.ok(['stop', 'length'].includes(whole.choices[0].finish_reason));
  assert.ok(whole.usage.completion_tokens <= 8, JSON.stringify(whole.usage));
  let streamed = '';
  for await (const chunk of await client.completions.create({ ...request, stream: true })) streamed += chunk.choices[0]?.text ?? '';
  assert.equal(streamed, text);
});

test('completions logprobs: 3, every token <= 0, at most 3 alternatives sorted, offsets true', async () => {
  const whole = await client.completions.create({ ...COMPLETION, logprobs: 3 });
  const choice = whole.choices[0];
  checkCompletionLogprobs(choice.text, choice.logprobs, 3);
  assert.equal(choice.logprobs.tokens.length, whole.usage.completion_tokens, 'one entry per generated token');
  assert.equal(choice.logprobs.tokens.join(''), choice.text);
  // The same text as without logprobs (they only report).
  const plain = await client.completions.create(COMPLETION);
  assert.equal(choice.text, plain.choices[0].text);
  assert.equal(plain.choices[0].logprobs, null);
});

test('completions logprobs streamed: each chunk carries the tokens of its text, together the whole response\'s', async () => {
  const request = { ...COMPLETION, logprobs: 2 };
  const whole = (await client.completions.create(request)).choices[0];
  const joined = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
  let text = '';
  for await (const chunk of await client.completions.create({ ...request, stream: true })) {
    const c = chunk.choices[0];
    if (!c) continue;
    text += c.text;
    if (c.logprobs === null) {
      assert.equal(c.text, '', `a chunk with text but no logprobs: ${JSON.stringify(c)}`);
      continue;
    }
    assert.equal(c.logprobs.tokens.join(''), c.text, 'a chunk\'s tokens are its text');
    for (const key of Object.keys(joined)) joined[key].push(...c.logprobs[key]);
  }
  assert.equal(text, whole.text);
  assert.deepEqual(joined, whole.logprobs);
});

test('echo: the prompt, then the completion; with logprobs the prompt\'s tokens scored (the first null)', async () => {
  const plain = await client.completions.create(COMPLETION);
  const echoed = await client.completions.create({ ...COMPLETION, echo: true, logprobs: 2 });
  const choice = echoed.choices[0];
  assert.equal(choice.text, PROMPT + plain.choices[0].text);
  const promptTokens = echoed.usage.prompt_tokens;
  assert.equal(choice.logprobs.tokens.length, promptTokens + echoed.usage.completion_tokens);
  checkCompletionLogprobs(choice.text, choice.logprobs, 2, { nullFirst: 1, given: promptTokens });
  assert.equal(choice.logprobs.tokens.slice(0, promptTokens).join(''), PROMPT);
  // Streamed: the prompt is the first chunk's text; with logprobs the chunk carries its tokens'.
  const chunks = [];
  for await (const chunk of await client.completions.create({ ...COMPLETION, echo: true, stream: true })) chunks.push(chunk);
  assert.equal(chunks[0].choices[0].text, PROMPT);
  assert.equal(chunks.map((c) => c.choices[0]?.text ?? '').join(''), choice.text);
  const scored = [];
  for await (const chunk of await client.completions.create({ ...COMPLETION, echo: true, logprobs: 2, stream: true })) scored.push(chunk);
  const first = scored[0].choices[0];
  assert.equal(first.text, PROMPT);
  assert.deepEqual(first.logprobs.token_logprobs, choice.logprobs.token_logprobs.slice(0, promptTokens));
  assert.deepEqual(first.logprobs.top_logprobs, choice.logprobs.top_logprobs.slice(0, promptTokens));
});

test('max_tokens 0 with echo and logprobs: the prompt alone, scored (OpenAI\'s legacy scoring form)', async () => {
  const scored = await client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 0, echo: true, logprobs: 1 });
  const choice = scored.choices[0];
  assert.equal(choice.text, PROMPT);
  assert.equal(scored.usage.completion_tokens, 0);
  const promptTokens = scored.usage.prompt_tokens;
  assert.equal(choice.logprobs.tokens.length, promptTokens);
  checkCompletionLogprobs(choice.text, choice.logprobs, 1, { nullFirst: 1, given: promptTokens });
  const withToken = await client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 1, echo: true, logprobs: 1 });
  assert.deepEqual(choice.logprobs.token_logprobs, withToken.choices[0].logprobs.token_logprobs.slice(0, promptTokens));
  let streamed = '';
  for await (const chunk of await client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 0, echo: true, logprobs: 1, stream: true })) streamed += chunk.choices[0]?.text ?? '';
  assert.equal(streamed, PROMPT);
  const err = await rejection(client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 0 }));
  assert.equal(err.status, 400);
  assert.equal(err.param, 'max_tokens');
});

// What lm-evaluation-harness's local-completions model sends for a loglikelihood request: the
// context and continuation as token ids, max_tokens 1, echo, logprobs 1; it sums
// token_logprobs[ctxlen:-1]. On the trained model a verse's own continuation scores above the
// same words in another order.
test('echo + logprobs scores a continuation as lm-evaluation-harness asks for it', async () => {
  const context = 'In the beginning God created the';
  const score = async (continuation) => {
    const tokenize = async (text) => (await client.completions.create({ model: MODEL, prompt: text, max_tokens: 1, echo: true, logprobs: 0 })).choices[0].logprobs.tokens.length - 1;
    const ctxlen = await tokenize(context);
    const whole = await client.completions.create({ model: MODEL, prompt: context + continuation, max_tokens: 1, echo: true, logprobs: 1, temperature: 0 });
    const lp = whole.choices[0].logprobs;
    const values = lp.token_logprobs.slice(ctxlen, -1);
    assert.ok(values.length > 0 && values.every((v) => typeof v === 'number' && v <= 0), JSON.stringify(lp));
    return values.reduce((a, b) => a + b, 0);
  };
  const verse = await score(' heaven and the earth.');
  const shuffled = await score(' earth the and heaven.');
  assert.ok(verse > shuffled, `the verse ${verse} vs the same words shuffled ${shuffled}`);
});

test('chat logprobs with top_logprobs: OpenAI\'s content shape, whole and streamed', async () => {
  const whole = await client.chat.completions.create({ ...CHAT, logprobs: true, top_logprobs: 2 });
  const choice = whole.choices[0];
  const content = choice.logprobs.content;
  assert.equal(content.length, whole.usage.completion_tokens);
  assert.equal(content.map((e) => e.token).join(''), choice.message.content);
  // What `bytes` are for: joined, the answer's UTF-8 (also where a token holds part of a character).
  assert.equal(Buffer.from(content.flatMap((e) => e.bytes)).toString('utf8'), choice.message.content);
  for (const [i, e] of content.entries()) {
    assert.ok(e.logprob <= 0, `token ${i}: ${e.logprob}`);
    if (!e.token.includes('\uFFFD')) assert.deepEqual(e.bytes, [...Buffer.from(e.token, 'utf8')]);
    assert.ok(e.top_logprobs.length >= 1 && e.top_logprobs.length <= 2, JSON.stringify(e));
    for (let j = 1; j < e.top_logprobs.length; ++j) assert.ok(e.top_logprobs[j - 1].logprob >= e.top_logprobs[j].logprob, JSON.stringify(e));
    assert.ok(e.logprob >= e.top_logprobs[0].logprob - EPS, `greedy: the chosen token is the most likely: ${JSON.stringify(e)}`);
    const own = e.top_logprobs.find((t) => t.token === e.token);
    if (own) assert.ok(Math.abs(own.logprob - e.logprob) < EPS, JSON.stringify(e));
  }
  // logprobs alone: the chosen tokens, no alternatives.
  const bare = await client.chat.completions.create({ ...CHAT, logprobs: true });
  assert.deepEqual(bare.choices[0].logprobs.content.map((e) => e.top_logprobs.length), content.map(() => 0));
  assert.deepEqual(bare.choices[0].logprobs.content.map((e) => e.logprob), content.map((e) => e.logprob));
  // Streamed: each chunk's entries are its delta's text; together the whole response's.
  const entries = [];
  let text = '';
  for await (const chunk of await client.chat.completions.create({ ...CHAT, logprobs: true, top_logprobs: 2, stream: true })) {
    const c = chunk.choices[0];
    if (!c) continue;
    text += c.delta.content ?? '';
    if (c.logprobs) {
      assert.equal(c.logprobs.content.map((e) => e.token).join(''), c.delta.content ?? '');
      entries.push(...c.logprobs.content);
    }
  }
  assert.equal(text, choice.message.content);
  assert.deepEqual(entries, content);
});

test('template: the fixed text stays exactly, the holes are filled, streamed as it fills', async () => {
  const template = ' I AM THAT<hole:3> and he said,<hole:6>.';
  const shape = /^ I AM THAT([\s\S]*) and he said,([\s\S]*)\.$/;
  const request = { model: MODEL, prompt: PROMPT, template, logprobs: 1 };
  const whole = await client.completions.create(request);
  const choice = whole.choices[0];
  assert.match(choice.text, shape);
  assert.equal(choice.finish_reason, 'stop');
  assert.equal(whole.usage.completion_tokens, whole.unmask.params.max_tokens, 'max_tokens is the template\'s length');
  const lp = choice.logprobs;
  assert.equal(lp.tokens.length, whole.usage.completion_tokens);
  assert.equal(lp.token_logprobs.filter((x) => x !== null).length, 9, 'a logprob for each of the 3 + 6 hole tokens');
  lp.token_logprobs.forEach((x, i) => assert.equal(x === null, lp.top_logprobs[i] === null, `token ${i}`));
  lp.tokens.forEach((t, i) => assert.ok(choice.text.startsWith(t, lp.text_offset[i]), `token ${i} ${JSON.stringify(t)}`));
  // Streamed: the text before the first hole comes first, the rest as the holes fill.
  const chunks = [];
  for await (const chunk of await client.completions.create({ ...request, stream: true })) chunks.push(chunk);
  assert.equal(chunks[0].choices[0].text, ' I AM THAT');
  assert.equal(chunks.map((c) => c.choices[0]?.text ?? '').join(''), choice.text);
  // Chat: the template is the assistant's answer.
  const chat = await client.chat.completions.create({ ...CHAT, max_tokens: undefined, block_length: undefined, steps: undefined, template });
  assert.match(chat.choices[0].message.content, shape);
});

test('400: bad suffix, echo, logprobs, top_logprobs and template values name their field', async () => {
  const cases = [
    [() => client.completions.create({ ...COMPLETION, logprobs: 21 }), 'logprobs'],
    [() => client.completions.create({ ...COMPLETION, logprobs: 1.5 }), 'logprobs'],
    [() => client.completions.create({ ...COMPLETION, suffix: 5 }), 'suffix'],
    [() => client.completions.create({ ...COMPLETION, echo: 'yes' }), 'echo'],
    [() => client.completions.create({ ...COMPLETION, max_tokens: undefined, template: 'no hole at all' }), 'template'],
    [() => client.completions.create({ ...COMPLETION, max_tokens: undefined, template: 'A <hole:0> B' }), 'template'],
    [() => client.completions.create({ ...COMPLETION, max_tokens: 99, block_length: undefined, steps: undefined, template: 'A<hole:2>.' }), 'max_tokens'],
    [() => client.completions.create({ ...COMPLETION, template: 'A<hole:2>.', stop: '.' }), 'stop'],
    [() => client.chat.completions.create({ ...CHAT, suffix: ' amen' }), 'suffix'],
    [() => client.chat.completions.create({ ...CHAT, echo: true }), 'echo'],
    [() => client.chat.completions.create({ ...CHAT, top_logprobs: 2 }), 'top_logprobs'],
    [() => client.chat.completions.create({ ...CHAT, logprobs: true, top_logprobs: 21 }), 'top_logprobs'],
    [() => client.chat.completions.create({ ...CHAT, logprobs: 3 }), 'logprobs'],
  ];
  for (const [call, param] of cases) {
    const err = await rejection(call());
    assert.ok(err instanceof OpenAI.BadRequestError, `${param}: ${err}`);
    assert.equal(err.param, param, String(err));
    assert.ok(err.message.includes(param), err.message);
  }
});
