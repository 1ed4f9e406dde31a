// The official openai npm SDK against `switchyard serve` + fake upstream.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const client = new OpenAI({ baseURL: `${process.env.SWITCHYARD_URL}/v1`, apiKey: 'sk-local-not-checked', maxRetries: 0 });

test('responses: streaming answer arrives intact', async () => {
  const stream = await client.responses.create({ model: 'gpt-5', input: 'ECHO: streamed through switchyard', stream: true });
  let text = '';
  const types = [];
  for await (const event of stream) {
    types.push(event.type);
    if (event.type === 'response.output_text.delta') text += event.delta;
  }
  assert.equal(types[0], 'response.created');
  assert.equal(types.at(-1), 'response.completed');
  assert.ok(!types.some((t) => t.startsWith('codex.')), '/v1 streams drop codex.* events');
  assert.equal(text, 'streamed through switchyard');
});

test('responses: non-streaming returns the final response object', async () => {
  const response = await client.responses.create({ model: 'gpt-5', input: 'ECHO: whole response', max_output_tokens: 100, temperature: 0.2 });
  assert.equal(response.status, 'completed');
  assert.equal(response.output_text, 'whole response');
  assert.ok(response.usage.total_tokens > 0);
});

test('responses: stream helper with finalResponse', async () => {
  const stream = client.responses.stream({ model: 'gpt-5', input: 'ECHO: helper works' });
  const final = await stream.finalResponse();
  assert.equal(final.output_text, 'helper works');
});

test('chat completions: streaming with usage', async () => {
  const stream = await client.chat.completions.create({
    model: 'gpt-5', stream: true, stream_options: { include_usage: true },
    messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'ECHO: chat stream ok' }],
  });
  let text = '';
  let finish = null;
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta?.content) text += c.delta.content;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.equal(text, 'chat stream ok');
  assert.equal(finish, 'stop');
  assert.ok(usage && usage.total_tokens > 0);
});

test('chat completions: non-streaming', async () => {
  const completion = await client.chat.completions.create({ model: 'gpt-5', max_tokens: 50, messages: [{ role: 'user', content: 'ECHO: chat whole' }] });
  assert.equal(completion.choices[0].message.content, 'chat whole');
  assert.equal(completion.choices[0].finish_reason, 'stop');
  assert.ok(completion.usage.prompt_tokens > 0);
});

test('chat completions: one tool call round trip', async () => {
  const tools = [{ type: 'function', function: { name: 'read_file', description: 'read a file', parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } } }];
  const first = await client.chat.completions.create({ model: 'gpt-5', tools, messages: [{ role: 'user', content: 'CALL_TOOL please' }] });
  const choice = first.choices[0];
  assert.equal(choice.finish_reason, 'tool_calls');
  const call = choice.message.tool_calls[0];
  assert.equal(call.function.name, 'read_file');
  assert.deepEqual(JSON.parse(call.function.arguments), { path: 'README.md' });
  const second = await client.chat.completions.create({
    model: 'gpt-5', tools,
    messages: [{ role: 'user', content: 'CALL_TOOL please' }, choice.message, { role: 'tool', tool_call_id: call.id, content: 'file body' }, { role: 'user', content: 'ECHO: tool done' }],
  });
  assert.equal(second.choices[0].message.content, 'tool done');
});

test('responses: streaming tool call', async () => {
  const tools = [{ type: 'function', name: 'read_file', parameters: { type: 'object', properties: { path: { type: 'string' } } } }];
  const stream = client.responses.stream({ model: 'gpt-5', tools, input: 'CALL_TOOL now' });
  const final = await stream.finalResponse();
  const call = final.output.find((o) => o.type === 'function_call');
  assert.ok(call, 'a function_call output item');
  assert.equal(call.name, 'read_file');
});

test('models list', async () => {
  const models = await client.models.list();
  assert.ok(models.data.length > 0);
});
