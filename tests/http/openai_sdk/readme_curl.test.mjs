// The curl examples of the README's "OpenAI-compatible HTTP" section, run as written against
// the real stack (only localhost:8000 is replaced by the test scheduler's address).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

function section(readme, title) {
  const start = readme.indexOf(`\n## ${title}\n`);
  assert.ok(start >= 0, `the README has no "## ${title}" section`);
  const end = readme.indexOf('\n## ', start + 1);
  return readme.slice(start, end < 0 ? undefined : end);
}

// Every command in a ```sh block that starts with curl (backslash continuations joined).
function curlCommands(text) {
  const commands = [];
  for (const block of text.matchAll(/```sh\n([\s\S]*?)```/g)) {
    const joined = block[1].replace(/\\\n\s*/g, ' ');
    for (const line of joined.split('\n')) {
      if (line.trim().startsWith('curl ')) commands.push(line.trim());
    }
  }
  return commands;
}

const doc = section(readFileSync(process.env.UNMASK_README, 'utf8'), 'OpenAI-compatible HTTP');
const commands = curlCommands(doc);
const host = new URL(process.env.UNMASK_HTTP_URL).host;

test('the section says how to turn the API on', () => {
  assert.match(doc, /--http-port 8000/);
});

test('the README shows curl for every endpoint, streaming included', () => {
  const joined = commands.join('\n');
  for (const needle of ['/v1/models', '/v1/chat/completions', '/v1/completions', '"stream": true']) {
    assert.ok(joined.includes(needle), `no curl example with ${needle}`);
  }
});

for (const command of commands) {
  test(`runs: ${command.slice(0, 90)}`, () => {
    assert.ok(command.includes('localhost:8000'), command);
    const out = execFileSync('bash', ['-c', command.replaceAll('localhost:8000', host)], { encoding: 'utf8' });
    if (command.includes('"stream": true')) {
      const events = out.split('\n\n').filter((e) => e.startsWith('data: '));
      assert.equal(events.at(-1), 'data: [DONE]');
      const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice(6)));
      assert.ok(chunks.every((c) => !c.error), out.slice(0, 500));
      assert.ok(chunks.some((c) => c.unmask?.step !== undefined), 'no diffusion step in the stream');
      const text = chunks.map((c) => c.choices?.[0]?.delta?.content ?? c.choices?.[0]?.text ?? '').join('');
      assert.ok(text.trim().length > 0, 'the stream carried no text');
      return;
    }
    const body = JSON.parse(out);
    assert.equal(body.error, undefined, out);
    if (command.includes('/v1/models')) {
      assert.ok(body.data.some((m) => m.id === 'unmask-kjv'), out);
    } else if (command.includes('/v1/chat/completions')) {
      assert.ok(body.choices[0].message.content.trim().length > 0, out);
    } else if (command.includes('"likelihood"')) {  // an estimate, no text
      assert.ok(body.choices[0].likelihood.loglikelihood < 0, out);
      assert.equal(body.choices[0].text, '', out);
    } else {
      assert.ok(body.choices[0].text.trim().length > 0, out);
    }
  });
}
