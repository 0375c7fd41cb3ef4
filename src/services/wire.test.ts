import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ToolbusError } from '../errors/index.js';
import { RemoteToolError } from './remote-tool-error.js';
import {
  cancelTopicOf,
  decodeEnvelopeObject,
  decodeRequest,
  decodeResponse,
  encodeRequest,
  encodeResponse,
  fromWireError,
  readDeadline,
  serviceGroupOf,
  toWireError,
} from './wire.js';

const isInvalid = (fragment: RegExp) => (e: unknown) =>
  e instanceof ToolbusError && e.code === 'invalid-request' && fragment.test(e.message);

describe('wire codec', () => {
  test('encodes the request with the seed field names, config and arguments as JSON text', () => {
    assert.equal(
      encodeRequest({ user: 'alice', config: '{"style":"pun"}', arguments: '{"topic":"cats"}' }),
      '{"user":"alice","config":"{\\"style\\":\\"pun\\"}","arguments":"{\\"topic\\":\\"cats\\"}"}',
    );
  });

  test('encodes the response with error null, response and end_of_stream', () => {
    assert.equal(
      encodeResponse({ error: null, response: 'hi', end_of_stream: true }),
      '{"error":null,"response":"hi","end_of_stream":true}',
    );
    assert.equal(
      encodeResponse({
        error: { type: 'tool-service-error', message: 'boom' },
        response: '',
        end_of_stream: true,
      }),
      '{"error":{"type":"tool-service-error","message":"boom"},"response":"","end_of_stream":true}',
    );
  });

  test('decodes a request from bytes; missing fields default to "" (TrustGraph at HEAD sends no user)', () => {
    const bytes = new TextEncoder().encode('{"config":"{}","arguments":"{\\"topic\\":\\"x\\"}","extra":1}');
    assert.deepEqual(decodeRequest(bytes), { user: '', config: '{}', arguments: '{"topic":"x"}' });
    assert.deepEqual(decodeEnvelopeObject('', 'config'), {});
    assert.deepEqual(decodeEnvelopeObject('{"a":1}', 'arguments'), { a: 1 });
  });

  test('rejects malformed requests with invalid-request naming what was wrong', () => {
    assert.throws(() => decodeRequest('not json'), isInvalid(/body is not JSON/));
    assert.throws(() => decodeRequest('[1]'), isInvalid(/must be a JSON object, got array/));
    assert.throws(() => decodeRequest('{"user":5}'), isInvalid(/field 'user' must be a string, got number/));
    assert.throws(
      () => decodeEnvelopeObject('{oops', 'config'),
      isInvalid(/field 'config' must hold JSON text/),
    );
    assert.throws(
      () => decodeEnvelopeObject('[1,2]', 'arguments'),
      isInvalid(/'arguments' must hold a JSON object, got array/),
    );
  });

  test('decodes responses with dataclass defaults and rejects wrong types', () => {
    assert.deepEqual(decodeResponse('{}'), { error: null, response: '', end_of_stream: false });
    assert.deepEqual(decodeResponse('{"error":{"type":"x"},"end_of_stream":true}'), {
      error: { type: 'x', message: '' },
      response: '',
      end_of_stream: true,
    });
    assert.throws(() => decodeResponse('{"response":1}'), isInvalid(/'response' must be a string/));
    assert.throws(
      () => decodeResponse('{"end_of_stream":"yes"}'),
      isInvalid(/'end_of_stream' must be a boolean/),
    );
    assert.throws(() => decodeResponse('{"error":"bad"}'), isInvalid(/'error' must be null or/));
  });

  test('toWireError keeps wire-known codes and maps everything else to tool-service-error', () => {
    assert.deepEqual(toWireError(new Error('boom')), { type: 'tool-service-error', message: 'boom' });
    assert.deepEqual(toWireError('plain'), { type: 'tool-service-error', message: 'plain' });
    assert.deepEqual(toWireError(new ToolbusError('too-many-requests', 'full')), {
      type: 'too-many-requests',
      message: 'full',
    });
    assert.deepEqual(toWireError(new ToolbusError('invalid-config', 'x')), {
      type: 'tool-service-error',
      message: 'x',
    });
  });

  test('fromWireError builds a tool-error naming the service, remote type and message', () => {
    const error = fromWireError(
      { type: 'tool-service-error', message: 'no jokes left' },
      'request:tg:joke',
      'tell-joke',
    );
    assert.ok(error instanceof RemoteToolError);
    assert.equal(error.name, 'RemoteToolError');
    assert.equal(error.code, 'tool-error');
    assert.equal(error.remoteType, 'tool-service-error');
    assert.equal(error.remoteMessage, 'no jokes left');
    assert.equal(error.toolName, 'tell-joke');
    assert.match(error.message, /'request:tg:joke'.*'tool-service-error'.*no jokes left/);
  });

  test('the control topic and the replica group derive from the canonical request queue', () => {
    assert.equal(cancelTopicOf('non-persistent://tg/request/joke'), 'request:tg:joke:cancel');
    assert.equal(cancelTopicOf('request:tg:joke'), 'request:tg:joke:cancel');
    assert.equal(serviceGroupOf('non-persistent://tg/request/joke'), 'tool-service:request:tg:joke');
  });

  test('the deadline property is epoch ms; absent, empty or not a number means no deadline', () => {
    assert.equal(readDeadline({ deadline: '1700000000000' }), 1_700_000_000_000);
    assert.equal(readDeadline({}), undefined);
    assert.equal(readDeadline({ deadline: '' }), undefined);
    assert.equal(readDeadline({ deadline: ' ' }), undefined);
    assert.equal(readDeadline({ deadline: 'soon' }), undefined);
  });
});
