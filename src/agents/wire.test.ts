import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ToolbusError } from '../errors/index.js';
import {
  decodeAgentProgress,
  decodeAgentRequest,
  decodeAgentResponse,
  encodeAgentProgress,
  encodeAgentRequest,
  encodeAgentResponse,
  fromAgentWireError,
  toAgentWireError,
} from './wire.js';

describe('agent wire format', () => {
  test("responses carry TrustGraph's field names on the wire and camelCase in TypeScript", () => {
    const text = encodeAgentResponse({
      messageType: 'thought',
      content: 'hmm',
      endOfMessage: true,
      endOfDialog: false,
      error: null,
    });
    assert.deepEqual(JSON.parse(text), {
      message_type: 'thought',
      content: 'hmm',
      end_of_message: true,
      end_of_dialog: false,
      error: null,
    });
    assert.deepEqual(decodeAgentResponse(new TextEncoder().encode(text)), {
      messageType: 'thought',
      content: 'hmm',
      endOfMessage: true,
      endOfDialog: false,
      error: null,
    });
  });

  test('requests round-trip; user and streaming default; unknown fields are ignored', () => {
    const request = {
      question: 'q',
      user: 'alice',
      history: [{ role: 'user' as const, content: 'hi' }],
      streaming: true,
    };
    assert.deepEqual(decodeAgentRequest(encodeAgentRequest(request)), request);
    assert.deepEqual(decodeAgentRequest('{"question": "q", "collection": "default"}'), {
      question: 'q',
      user: '',
      streaming: false,
    });
  });

  test('the run id and principal (toolbus extensions) round-trip; a run id that cannot be a store key is refused', () => {
    const request = { question: 'q', user: '', streaming: false, runId: 'run-1', principal: 'carol' };
    const text = encodeAgentRequest(request);
    assert.match(text, /"run_id":"run-1","principal":"carol"/);
    assert.deepEqual(decodeAgentRequest(text), request);
    assert.throws(() => decodeAgentRequest('{"question": "q", "run_id": "../x"}'), {
      code: 'invalid-request',
      message: /field 'run_id' must be 1-128 characters/,
    });
    const approval = decodeAgentResponse(
      '{"message_type": "approval", "content": "{}", "end_of_message": true, "end_of_dialog": false}',
    );
    assert.equal(approval.messageType, 'approval');
  });

  test("progress (a toolbus extension) is asked for with 'progress: true', sent only when true", () => {
    const asked = { question: 'q', user: '', streaming: false, progress: true };
    const text = encodeAgentRequest(asked);
    assert.match(text, /"progress":true/);
    assert.deepEqual(decodeAgentRequest(text), asked);
    // A TrustGraph-format request never carries the field, and false is the same as absent.
    assert.doesNotMatch(encodeAgentRequest({ ...asked, progress: false }), /progress/);
    assert.doesNotMatch(encodeAgentRequest({ question: 'q', user: '', streaming: false }), /progress/);
    assert.deepEqual(decodeAgentRequest('{"question": "q", "progress": false}'), {
      question: 'q',
      user: '',
      streaming: false,
    });
    assert.equal(decodeAgentRequest('{"question": "q", "progress": null}').progress, undefined);
    for (const bad of ['"yes"', '1', '{}']) {
      assert.throws(() => decodeAgentRequest(`{"question": "q", "progress": ${bad}}`), {
        name: 'ToolbusError',
        code: 'invalid-request',
        message: /agent request: field 'progress' must be a boolean, got (a string|number|object)/,
      });
    }
  });

  test('progress responses carry the report as JSON content with wire field names', () => {
    const content = encodeAgentProgress({
      callId: 'c1',
      toolName: 'convert',
      progress: { progress: 3, total: 10, message: 'page 3' },
    });
    assert.deepEqual(JSON.parse(content), {
      call_id: 'c1',
      tool: 'convert',
      progress: 3,
      total: 10,
      message: 'page 3',
    });
    assert.deepEqual(decodeAgentProgress(content), {
      callId: 'c1',
      toolName: 'convert',
      progress: { progress: 3, total: 10, message: 'page 3' },
    });
    // total and message only when the tool gave them.
    const bare = encodeAgentProgress({ callId: 'c2', toolName: 't', progress: { progress: 1 } });
    assert.equal(bare, '{"call_id":"c2","tool":"t","progress":1}');
    assert.deepEqual(decodeAgentProgress(bare).progress, { progress: 1 });
    const response = decodeAgentResponse(
      `{"message_type": "progress", "content": ${JSON.stringify(bare)}, "end_of_message": true, "end_of_dialog": false}`,
    );
    assert.equal(response.messageType, 'progress');
    const cases: [string, RegExp][] = [
      ['nope', /agent progress: body is not JSON/],
      ['{"tool": "t", "progress": 1}', /field 'call_id' must be a string, got undefined/],
      ['{"call_id": "c", "progress": 1}', /field 'tool' must be a string/],
      [
        '{"call_id": "c", "tool": "t", "progress": "1"}',
        /field 'progress' must be a finite number, got a string/,
      ],
      ['{"call_id": "c", "tool": "t", "progress": 1, "total": "9"}', /field 'total' must be a finite number/],
      ['{"call_id": "c", "tool": "t", "progress": 1, "message": 5}', /field 'message' must be a string/],
    ];
    for (const [text, message] of cases) {
      assert.throws(() => decodeAgentProgress(text), { code: 'invalid-request', message });
    }
  });

  test('bad requests and responses are refused with invalid-request naming the field', () => {
    const cases: [string, RegExp][] = [
      ['not json', /agent request: body is not JSON/],
      ['[]', /body must be a JSON object, got an array/],
      ['{"question": 3}', /field 'question' must be a non-empty string, got number/],
      ['{"question": "q", "user": 1}', /field 'user' must be a string/],
      ['{"question": "q", "streaming": "yes"}', /field 'streaming' must be a boolean/],
      ['{"question": "q", "history": [{"role": "system", "content": "x"}]}', /history\[0\] must be/],
    ];
    for (const [body, message] of cases) {
      assert.throws(() => decodeAgentRequest(body), {
        name: 'ToolbusError',
        code: 'invalid-request',
        message,
      });
    }
    assert.throws(() => decodeAgentResponse('{"message_type": "action"}'), {
      code: 'invalid-request',
      message: /agent response: field 'message_type' must be one of thought, observation, answer, error/,
    });
  });

  test('errors: run failures are agent-error on the wire and service-error locally; known codes are kept', () => {
    assert.deepEqual(toAgentWireError(new Error('boom')), { type: 'agent-error', message: 'boom' });
    assert.deepEqual(toAgentWireError(new ToolbusError('model-error', 'bad model')), {
      type: 'agent-error',
      message: 'bad model',
    });
    assert.equal(toAgentWireError(new ToolbusError('cancelled', 'x')).type, 'cancelled');
    const local = fromAgentWireError({ type: 'agent-error', message: 'boom' }, 'request:tg:agent');
    assert.equal(local.code, 'service-error');
    assert.equal(local.message, "agent service 'request:tg:agent' returned error 'agent-error': boom");
    assert.equal(fromAgentWireError({ type: 'timeout', message: 'late' }, 's').code, 'timeout');
    assert.equal(fromAgentWireError({ type: 'weird', message: '' }, 's').code, 'service-error');
  });
});
