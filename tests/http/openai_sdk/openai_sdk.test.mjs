// The official openai SDK against unmask-scheduler's HTTP API, as a user would use it: the
// stack is the real binaries serving models/unmask-kjv (started by openai_sdk_driver).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import OpenAI from 'openai';

const baseURL = `${process.env.UNMASK_HTTP_URL}/v1`;
const client = new OpenAI({ baseURL, apiKey: 'not-checked', maxRetries: 0, timeout: 120_000 });
const MODEL = 'unmask-kjv';
const CHAT = {
  model: MODEL,
  messages: [{ role: 'user', content: 'What does John 3:16 say?' }],
  max_tokens: 64,
  block_length: 8, // small blocks: the reply is written before the EOS padding closes it
  steps: 64,
};

const words = (s) => s.split(/[^A-Za-z]+/).filter(Boolean);

async function rejection(promise) {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  assert.fail('the request was expected to fail');
}

test('lists the served model', async () => {
  const models = await client.models.list();
  const ids = models.data.map((m) => m.id);
  assert.deepEqual(ids, [MODEL]);
  assert.equal(models.data[0].object, 'model');
  assert.ok(models.data[0].unmask.executors.length >= 1);
});

test('chat completion: an answer that ends by itself, usage, the clamp report', async () => {
  const { data, response } = await client.chat.completions.create(CHAT).withResponse();
  const choice = data.choices[0];
  assert.equal(data.object, 'chat.completion');
  assert.equal(choice.message.role, 'assistant');
  assert.ok(words(choice.message.content).length >= 3, choice.message.content);
  assert.ok(!choice.message.content.includes('<|'), choice.message.content);
  assert.equal(choice.finish_reason, 'stop'); // ended with EOT before 64 tokens
  assert.ok(data.usage.prompt_tokens > 5);
  assert.ok(data.usage.completion_tokens >= 3 && data.usage.completion_tokens < 64, JSON.stringify(data.usage));
  assert.equal(data.usage.total_tokens, data.usage.prompt_tokens + data.usage.completion_tokens);
  assert.deepEqual(data.unmask.clamped, []);
  assert.equal(data.unmask.params.steps, 64);
  assert.equal(response.headers.get('x-unmask-clamped'), 'none');
  assert.equal(response.headers.get('x-unmask-job-id'), data.unmask.job_id);
  assert.equal(data.id, `chatcmpl-${data.unmask.job_id}`);
});

test('streamed chat completion: deltas add up to the same answer, every diffusion step arrives', async () => {
  const whole = await client.chat.completions.create(CHAT);
  const stream = await client.chat.completions.create({ ...CHAT, stream: true, stream_options: { include_usage: true } });
  let text = '';
  let role = null;
  let finish = null;
  let usage = null;
  const steps = [];
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'chat.completion.chunk');
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices[0];
    if (!choice) continue;
    role = choice.delta.role ?? role;
    text += choice.delta.content ?? '';
    finish = choice.finish_reason ?? finish;
    if (chunk.unmask?.step !== undefined) {
      assert.equal(chunk.unmask.positions.length, chunk.unmask.tokens.length);
      steps.push(chunk.unmask.step);
    }
  }
  assert.equal(role, 'assistant');
  assert.equal(text, whole.choices[0].message.content); // greedy: the same text, streamed
  assert.equal(finish, 'stop');
  assert.deepEqual(steps, [...Array(64).keys()]);
  assert.deepEqual(usage, whole.usage);
});

test('completion, and a stop string that cuts it', async () => {
  const request = { model: MODEL, prompt: 'And God said unto Moses,', max_tokens: 32, block_length: 32, steps: 32 };
  const first = await client.completions.create(request);
  assert.equal(first.object, 'text_completion');
  const text = first.choices[0].text;
  const w = words(text);
  assert.ok(w.length >= 4, text);
  assert.equal(first.usage.total_tokens, first.usage.prompt_tokens + first.usage.completion_tokens);
  // Stop at a word in the middle: the text up to it, finish_reason "stop".
  const stopWord = ` ${w[2]}`;
  const cut = await client.completions.create({ ...request, stop: [stopWord] });
  assert.equal(cut.choices[0].text, text.slice(0, text.indexOf(stopWord)));
  assert.equal(cut.choices[0].finish_reason, 'stop');
  // Streamed, with the stop string: the same cut text.
  const stream = await client.completions.create({ ...request, stop: stopWord, stream: true });
  let streamed = '';
  for await (const chunk of stream) streamed += chunk.choices[0]?.text ?? '';
  assert.equal(streamed, cut.choices[0].text);
});

test('n: n choices with indexes 0..n-1, choice i the same request with seed + i, usage of them all', async () => {
  const request = { model: MODEL, prompt: 'And God said unto Moses,', max_tokens: 16, block_length: 16, steps: 16, temperature: 1 };
  const many = await client.completions.create({ ...request, seed: 20, n: 3 });
  assert.deepEqual(many.choices.map((c) => c.index), [0, 1, 2]);
  assert.equal(many.unmask.job_ids.length, 3);
  assert.deepEqual(many.unmask.choices.map((c) => c.seed), [20, 21, 22]);
  let completionTokens = 0;
  for (const [i, choice] of many.choices.entries()) {
    const single = await client.completions.create({ ...request, seed: 20 + i });
    assert.equal(choice.text, single.choices[0].text, `choice ${i}`);
    assert.equal(choice.finish_reason, single.choices[0].finish_reason, `choice ${i}`);
    assert.equal(many.usage.prompt_tokens, single.usage.prompt_tokens); // the prompt counts once
    completionTokens += single.usage.completion_tokens;
  }
  assert.equal(many.usage.completion_tokens, completionTokens);
  assert.equal(many.usage.total_tokens, many.usage.prompt_tokens + completionTokens);
  assert.ok(new Set(many.choices.map((c) => c.text)).size > 1, 'three seeds sampled the same text');
});

test('n: a streamed chat completion carries each choice\'s chunks with its index', async () => {
  const request = { ...CHAT, temperature: 1, seed: 3, n: 2 };
  const whole = await client.chat.completions.create(request);
  assert.deepEqual(whole.choices.map((c) => c.index), [0, 1]);
  const stream = await client.chat.completions.create({ ...request, stream: true, stream_options: { include_usage: true } });
  const text = ['', ''];
  const role = [null, null];
  const finish = [null, null];
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      assert.ok(choice.index === 0 || choice.index === 1, JSON.stringify(chunk));
      role[choice.index] = choice.delta.role ?? role[choice.index];
      text[choice.index] += choice.delta.content ?? '';
      finish[choice.index] = choice.finish_reason ?? finish[choice.index];
    }
  }
  assert.deepEqual(role, ['assistant', 'assistant']);
  assert.deepEqual(text, whole.choices.map((c) => c.message.content)); // the same seeds, streamed
  assert.deepEqual(finish, whole.choices.map((c) => c.finish_reason));
  assert.deepEqual(usage, whole.usage);
});

for (const n of [1, 2]) {
  test(`a client that disconnects from a stream cancels ${n > 1 ? 'the job of every choice (n = 2)' : 'its job'}`, async () => {
    const stream = await client.completions.create({
      model: MODEL, prompt: 'In the beginning', max_tokens: 256, block_length: 256, steps: 256, stream: true, n,
    });
    let jobIds = null;
    for await (const chunk of stream) {
      jobIds = jobIds ?? chunk.unmask?.job_ids ?? (chunk.unmask?.job_id ? [chunk.unmask.job_id] : null);
      if (chunk.unmask?.step !== undefined) break; // leaves the loop: the SDK aborts the request
    }
    assert.equal(jobIds?.length, n);
    const state = () =>
      execFileSync(process.env.UNMASK_CLI, ['--scheduler', process.env.UNMASK_SCHEDULER, 'jobs', '--state', 'cancelled'], {
        encoding: 'utf8',
      });
    const deadline = Date.now() + 30_000;
    while (!jobIds.every((id) => state().includes(id))) {
      assert.ok(Date.now() < deadline, `jobs ${jobIds} were not cancelled:\n${execFileSync(process.env.UNMASK_CLI, ['--scheduler', process.env.UNMASK_SCHEDULER, 'jobs'], { encoding: 'utf8' })}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  });
}

test('early_stop: false runs every block after the answer ended; absent keeps the fast samplers\' early stop', async () => {
  // The chat answer ends in EOS within the first block of 32; dual_cache runs 16 steps per block.
  const request = { ...CHAT, max_tokens: 64, block_length: 32, steps: 32, sampler: 'dual_cache', stream: true };
  const run = async (extra) => {
    let params = null;
    let steps = 0;
    let text = '';
    for await (const chunk of await client.chat.completions.create({ ...request, ...extra })) {
      params = params ?? chunk.unmask?.params ?? null;
      if (chunk.unmask?.step !== undefined) steps += 1;
      text += chunk.choices[0]?.delta?.content ?? '';
    }
    return { params, steps, text };
  };
  const byDefault = await run({});
  const off = await run({ early_stop: false });
  assert.equal(byDefault.params.early_stop, true);
  assert.equal(off.params.early_stop, false);
  assert.equal(byDefault.steps, 16);
  assert.equal(off.steps, 32);
  assert.equal(off.text, byDefault.text); // the rest of the row is EOS either way
});

test('400: a bad field is a BadRequestError naming it', async () => {
  for (const [extra, param] of [
    [{ n: 17 }, 'n'],
    [{ n: 0 }, 'n'],
    [{ n: 'two' }, 'n'],
    [{ max_tokens: 0 }, 'max_tokens'],
    [{ sampler: 'fastest' }, 'sampler'],
    [{ early_stop: 'off' }, 'early_stop'],
    [{ temperature: -1 }, 'temperature'],
  ]) {
    const err = await rejection(client.chat.completions.create({ ...CHAT, ...extra }));
    assert.ok(err instanceof OpenAI.BadRequestError, `${JSON.stringify(extra)}: ${err}`);
    assert.equal(err.status, 400);
    assert.equal(err.param, param);
    assert.ok(err.message.includes(param), err.message);
  }
  // The core's own checks after defaults: steps more than the tokens.
  const err = await rejection(client.completions.create({ model: MODEL, prompt: 'x', max_tokens: 8, steps: 16 }));
  assert.ok(err instanceof OpenAI.BadRequestError, String(err));
  assert.equal(err.param, 'steps');
});

test('tools: a model whose chat template has no place for them refuses them by name', async () => {
  // unmask-kjv's template (Llama-3's) renders no tools: offering some would be ignored silently.
  const tools = [{ type: 'function', function: { name: 'get_verse', description: 'A verse by reference',
    parameters: { type: 'object', properties: { reference: { type: 'string' } }, required: ['reference'] } } }];
  let err = await rejection(client.chat.completions.create({ ...CHAT, tools }));
  assert.ok(err instanceof OpenAI.BadRequestError, String(err));
  assert.equal(err.param, 'tools');
  assert.ok(err.message.includes("model 'unmask-kjv' takes no tools"), err.message);
  // tool_choice "none" offers none: the answer is text, as without tools.
  const plain = await client.chat.completions.create({ ...CHAT, tools, tool_choice: 'none' });
  assert.equal(typeof plain.choices[0].message.content, 'string');
  assert.equal(plain.choices[0].message.tool_calls, undefined);
  for (const [extra, param] of [
    [{ tools: [{ type: 'function', function: { name: 'get verse' } }] }, 'tools[0].function.name'],
    [{ tools, tool_choice: 'always' }, 'tool_choice'],
    [{ tools, tool_choice: { type: 'function', function: { name: 'get_psalm' } } }, 'tool_choice.function.name'],
    [{ functions: [{ name: 'get_verse' }] }, 'functions'],
  ]) {
    err = await rejection(client.chat.completions.create({ ...CHAT, ...extra }));
    assert.ok(err instanceof OpenAI.BadRequestError, `${JSON.stringify(extra)}: ${err}`);
    assert.equal(err.param, param);
  }
});

test('HTTPS: the SDK over TLS with the server certificate verified, whole and streamed', async () => {
  // The driver's scheduler serves a certificate of its own test CA, which node trusts through
  // NODE_EXTRA_CA_CERTS (as a user adds a private CA); nothing else changes for the SDK.
  const secure = new OpenAI({ baseURL: `${process.env.UNMASK_HTTPS_URL}/v1`, apiKey: 'x', maxRetries: 0, timeout: 120_000 });
  assert.ok(process.env.UNMASK_HTTPS_URL.startsWith('https://'));
  const whole = await secure.chat.completions.create(CHAT);
  assert.equal(typeof whole.choices[0].message.content, 'string');
  assert.ok(whole.usage.completion_tokens > 0);
  let text = '';
  for await (const chunk of await secure.chat.completions.create({ ...CHAT, stream: true })) {
    text += chunk.choices[0]?.delta?.content ?? '';
  }
  assert.equal(text, whole.choices[0].message.content, 'the same answer streamed (greedy)');
  // Plain HTTP to the HTTPS port gets no answer.
  const plain = new OpenAI({ baseURL: `${process.env.UNMASK_HTTPS_URL.replace('https:', 'http:')}/v1`, apiKey: 'x', maxRetries: 0, timeout: 10_000 });
  const err = await rejection(plain.models.list());
  assert.ok(err instanceof OpenAI.APIConnectionError || err instanceof OpenAI.APIError, String(err));
});

test('404: an unknown model is a NotFoundError', async () => {
  const err = await rejection(client.chat.completions.create({ ...CHAT, model: 'no-such-model' }));
  assert.ok(err instanceof OpenAI.NotFoundError, String(err));
  assert.equal(err.param, 'model');
  assert.equal(err.code, 'model_not_found');
});

test('413: a body over --http-max-body-bytes', async () => {
  const err = await rejection(client.completions.create({ model: MODEL, prompt: 'a'.repeat(100_000) }));
  assert.ok(err instanceof OpenAI.APIError, String(err));
  assert.equal(err.status, 413);
  assert.equal(err.code, 'request_too_large');
});

test('429: a full queue is a RateLimitError', async () => {
  const full = new OpenAI({ baseURL: `${process.env.UNMASK_HTTP_URL_FULL_QUEUE}/v1`, apiKey: 'x', maxRetries: 0 });
  const err = await rejection(full.chat.completions.create(CHAT));
  assert.ok(err instanceof OpenAI.RateLimitError, String(err));
  assert.equal(err.status, 429);
  assert.equal(err.code, 'queue_full');
});

test('401: a missing or wrong API key is an AuthenticationError; the right key is served', async () => {
  const url = `${process.env.UNMASK_HTTP_URL_KEYS}/v1`;
  for (const apiKey of ['', 'wrong-key']) {
    const c = new OpenAI({ baseURL: url, apiKey, maxRetries: 0 });
    for (const call of [() => c.models.list(), () => c.chat.completions.create(CHAT)]) {
      const err = await rejection(call());
      assert.ok(err instanceof OpenAI.AuthenticationError, String(err));
      assert.equal(err.status, 401);
      assert.equal(err.code, 'invalid_api_key');
    }
  }
  const ok = new OpenAI({ baseURL: url, apiKey: process.env.UNMASK_HTTP_KEY, maxRetries: 0, timeout: 120_000 });
  const models = await ok.models.list();
  assert.ok(models.data.some((m) => m.id === MODEL));
  const done = await ok.completions.create({ model: MODEL, prompt: 'And God said unto Moses,', max_tokens: 16, block_length: 16, steps: 16 });
  assert.ok(['stop', 'length'].includes(done.choices[0].finish_reason));
});

test('429: a key over its requests_per_second is a RateLimitError naming the limit', async () => {
  const slow = new OpenAI({ baseURL: `${process.env.UNMASK_HTTP_URL_KEYS}/v1`, apiKey: process.env.UNMASK_HTTP_SLOW_KEY, maxRetries: 0 });
  await slow.models.list();
  const err = await rejection(slow.models.list());
  assert.ok(err instanceof OpenAI.RateLimitError, String(err));
  assert.equal(err.status, 429);
  assert.equal(err.code, 'api_key_limit');
  assert.match(err.message, /requests_per_second=1/);
});

test('503: a model no executor serves is an InternalServerError with status 503', async () => {
  const err = await rejection(client.chat.completions.create({ ...CHAT, model: 'unserved-kjv' }));
  assert.ok(err instanceof OpenAI.InternalServerError, String(err));
  assert.equal(err.status, 503);
  assert.equal(err.code, 'no_executor');
});
