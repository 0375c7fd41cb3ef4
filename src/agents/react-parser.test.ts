import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseReActResponse, StreamingReActParser, type ReActChunk } from './react-parser.js';

describe('parseReActResponse', () => {
  test('parses a thought, an action and its arguments, keeping JSON types', () => {
    const step = parseReActResponse(
      'Thought: I need a joke\nAction: tell-joke\nArgs: {"topic": "cats", "count": 2, "tags": [1, true]}',
    );
    assert.deepEqual(step, {
      type: 'action',
      thought: 'I need a joke',
      action: 'tell-joke',
      args: { topic: 'cats', count: 2, tags: [1, true] },
    });
  });

  test('copes with code fences, multi-line thoughts, quoted names and JSON split across lines', () => {
    const text = [
      '```',
      'Thought: first line',
      'second line',
      'Action: "tell-joke"',
      'Args: ```json',
      '{',
      '  "topic": "a } brace in a string",',
      '  "n": 1.5',
      '}',
      '```',
      '```',
    ].join('\n');
    assert.deepEqual(parseReActResponse(text), {
      type: 'action',
      thought: 'first line\nsecond line',
      action: 'tell-joke',
      args: { topic: 'a } brace in a string', n: 1.5 },
    });
  });

  test('a final answer runs over several lines, JSON-looking text kept as a string', () => {
    const step = parseReActResponse('Thought: done\nFinal Answer: line one\n{"a": 1}\nline three');
    assert.deepEqual(step, { type: 'final', thought: 'done', answer: 'line one\n{"a": 1}\nline three' });
  });

  test('ignores a hallucinated observation and next step after the action', () => {
    const step = parseReActResponse(
      'Thought: t\nAction: add\nArgs: {"a": 1}\nObservation: 2\nThought: x\nFinal Answer: 2',
    );
    assert.equal(step.type, 'action');
    assert.deepEqual(step.type === 'action' && step.args, { a: 1 });
  });

  test('an action without Args gets empty arguments', () => {
    assert.deepEqual(parseReActResponse('Thought: t\nAction: now'), {
      type: 'action',
      thought: 't',
      action: 'now',
      args: {},
    });
  });

  test('failures say what is wrong', () => {
    const none = parseReActResponse('I think the answer is 4');
    assert.equal(none.type, 'error');
    assert.match(
      none.type === 'error' ? none.message : '',
      /neither an 'Action:' line nor a 'Final Answer:'/,
    );
    const bad = parseReActResponse('Thought: t\nAction: add\nArgs: {"a": 1,,}');
    assert.equal(bad.type, 'error');
    assert.match(bad.type === 'error' ? bad.message : '', /'Args:' of action 'add' is not valid JSON/);
    const open = parseReActResponse('Thought: t\nAction: add\nArgs: {"a": 1');
    assert.match(open.type === 'error' ? open.message : '', /not a complete JSON object/);
    const arr = parseReActResponse('Thought: t\nAction: add\nArgs: [1]');
    assert.match(arr.type === 'error' ? arr.message : '', /must be a JSON object, got an array/);
  });
});

function joined(chunks: ReActChunk[], kind: ReActChunk['kind']): string {
  return chunks
    .filter((c) => c.kind === kind)
    .map((c) => c.text)
    .join('');
}

describe('StreamingReActParser', () => {
  const text = 'Thought: I should\nthink twice\nFinal Answer: Here it is:\nsecond line';

  test('emits thought and answer text as it arrives, whatever the chunking', () => {
    for (const size of [1, 2, 3, 5, 8, 1000]) {
      const parser = new StreamingReActParser();
      const chunks: ReActChunk[] = [];
      for (let i = 0; i < text.length; i += size) chunks.push(...parser.push(text.slice(i, i + size)));
      const { chunks: rest, step } = parser.finish();
      chunks.push(...rest);
      assert.equal(joined(chunks, 'thought'), 'I should\nthink twice', `chunk size ${size}`);
      assert.equal(joined(chunks, 'answer'), 'Here it is:\nsecond line', `chunk size ${size}`);
      assert.deepEqual(step, {
        type: 'final',
        thought: 'I should\nthink twice',
        answer: 'Here it is:\nsecond line',
      });
    }
  });

  test('streamed answer pieces join to the parsed answer: blank lines kept, outer fences dropped', () => {
    const replies: [string, string][] = [
      [
        'Thought: plan\n\nit\nFinal Answer: Para one.\n\nPara two:\n\n\n- item\n\n',
        'Para one.\n\nPara two:\n\n\n- item',
      ],
      ['```\nThought: t\nFinal Answer: 42\n```', '42'],
      ['Thought: t\nFinal Answer: ```json\n{"a": 1}\n```\n', '{"a": 1}'],
      ['Thought: t\nFinal Answer: Run:\n```sh\nls\n```', 'Run:\n```sh\nls\n```'],
    ];
    for (const [reply, answer] of replies) {
      for (const size of [1, 2, 3, 7, 1000]) {
        const parser = new StreamingReActParser();
        const chunks: ReActChunk[] = [];
        for (let i = 0; i < reply.length; i += size) chunks.push(...parser.push(reply.slice(i, i + size)));
        const { chunks: rest, step } = parser.finish();
        chunks.push(...rest);
        assert.deepEqual(step, { type: 'final', thought: step.thought, answer });
        assert.equal(joined(chunks, 'answer'), answer, `${JSON.stringify(reply)}, chunk size ${size}`);
        assert.equal(joined(chunks, 'thought'), step.thought, `${JSON.stringify(reply)}, chunk size ${size}`);
      }
    }
  });

  test('**bold** markers are recognised whatever the chunking', () => {
    for (const reply of ['**Thought:** t\n**Final Answer:** 4', '**Thought**: t\n**Final Answer**: 4']) {
      for (let size = 1; size <= reply.length; size++) {
        const parser = new StreamingReActParser();
        const chunks: ReActChunk[] = [];
        for (let i = 0; i < reply.length; i += size) chunks.push(...parser.push(reply.slice(i, i + size)));
        chunks.push(...parser.finish().chunks);
        assert.equal(joined(chunks, 'thought'), 't', `${JSON.stringify(reply)}, chunk size ${size}`);
        assert.equal(joined(chunks, 'answer'), '4', `${JSON.stringify(reply)}, chunk size ${size}`);
      }
    }
  });

  test('holds back a marker split across chunks and emits a thought before the reply ends', () => {
    const parser = new StreamingReActParser();
    assert.deepEqual(parser.push('Thought: abc'), [{ kind: 'thought', text: 'abc' }]);
    assert.deepEqual(parser.push('\nFin'), []);
    assert.deepEqual(parser.push('al Answer: 4'), [{ kind: 'answer', text: '4' }]);
  });

  test('an action is not emitted as text, and the parsed step keeps the arguments', () => {
    const parser = new StreamingReActParser();
    const chunks = [
      ...parser.push('Thought: go\nAction: add\nArgs: {"a":'),
      ...parser.push(' 1}\nObservation: made up'),
    ];
    const { step } = parser.finish();
    assert.deepEqual(chunks, [{ kind: 'thought', text: 'go' }]);
    assert.deepEqual(step, { type: 'action', thought: 'go', action: 'add', args: { a: 1 } });
  });
});
