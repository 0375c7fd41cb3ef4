import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ToolbusError } from '../errors/index.js';
import {
  decodeAgentRequest,
  decodeAgentResponse,
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
