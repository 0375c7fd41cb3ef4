import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ToolbusError } from '../errors/index.js';
import { AgentId, TopicId } from './agent-id.js';
import type { MessageContext } from './agent-runtime.js';
import { RoutedAgent } from './routed-agent.js';
import { SingleThreadedAgentRuntime } from './single-threaded-agent-runtime.js';
import { TypeSubscription } from './type-subscription.js';

class Ping {
  constructor(readonly text: string) {}
}
class LoudPing extends Ping {}
class Fail {}
class Block {}
class Note {
  constructor(readonly text: string) {}
}

class Echo extends RoutedAgent {
  static created = 0;
  readonly notes: string[] = [];
  aborted: unknown;
  constructor() {
    super('echoes');
    this.messageHandler(Ping, (m) => `${this.id.key}:${m.text}`);
    this.messageHandler(Fail, () => {
      throw new RangeError('handler failed on purpose');
    });
    this.messageHandler(Block, (_m, ctx: MessageContext) => this.#block(ctx));
    this.messageHandler(Note, async (m, ctx) => {
      this.notes.push(`${m.text} from ${ctx.sender ? String(ctx.sender) : 'outside'}`);
      if (m.text === 'relay')
        await this.publishMessage(new Note('relayed'), new TopicId('notes', this.id.key));
    });
  }
  #block(ctx: MessageContext): Promise<never> {
    return new Promise((_resolve, reject) => {
      ctx.signal.addEventListener('abort', () => {
        this.aborted = ctx.signal.reason;
        reject(ctx.signal.reason);
      });
    });
  }
}

async function started(t: { after: (fn: () => Promise<void>) => void }): Promise<SingleThreadedAgentRuntime> {
  const runtime = new SingleThreadedAgentRuntime();
  await Echo.register(runtime, 'echo', () => new Echo());
  runtime.start();
  t.after(() => runtime.close());
  return runtime;
}

class Kinds extends RoutedAgent {
  constructor() {
    super('kinds');
    this.messageHandler(Note, () => 'rpc', { kind: 'rpc', match: (m) => m.text !== 'skip' });
    this.messageHandler(Note, () => 'fallback');
    this.messageHandler(Ping, () => 'event only', { kind: 'event' });
  }
}

describe('SingleThreadedAgentRuntime', () => {
  test('handler kind and match pick among handlers of one class, in registration order', async (t) => {
    const runtime = new SingleThreadedAgentRuntime();
    t.after(() => runtime.close());
    await runtime.register('kinds', () => new Kinds());
    runtime.start();
    const id = new AgentId('kinds');
    assert.equal(await runtime.sendMessage(new Note('x'), id), 'rpc');
    assert.equal(await runtime.sendMessage(new Note('skip'), id), 'fallback');
    await assert.rejects(runtime.sendMessage(new Ping('x'), id), { code: 'unsupported' });
  });

  test('sendMessage routes by message class (subclasses too) and creates one instance per key', async (t) => {
    const runtime = await started(t);
    assert.equal(await runtime.sendMessage(new Ping('hi'), new AgentId('echo', 'a')), 'a:hi');
    assert.equal(await runtime.sendMessage(new LoudPing('HI'), new AgentId('echo', 'b')), 'b:HI');
    const a1 = await runtime.getAgent(new AgentId('echo', 'a'));
    await runtime.sendMessage(new Ping('again'), new AgentId('echo', 'a'));
    assert.equal(await runtime.getAgent(new AgentId('echo', 'a')), a1);
    assert.notEqual(await runtime.getAgent(new AgentId('echo', 'b')), a1);
  });

  test('messages sent before start wait for it', async () => {
    const runtime = new SingleThreadedAgentRuntime();
    await runtime.register('echo', () => new Echo());
    const reply = runtime.sendMessage(new Ping('early'), new AgentId('echo'));
    runtime.start();
    assert.equal(await reply, 'default:early');
    await runtime.stopWhenIdle();
    await runtime.close();
  });

  test("a handler's error reaches the caller unchanged", async (t) => {
    const runtime = await started(t);
    await assert.rejects(runtime.sendMessage(new Fail(), new AgentId('echo')), {
      name: 'RangeError',
      message: 'handler failed on purpose',
    });
  });

  test('an unknown agent type or message class is refused with a clear error', async (t) => {
    const runtime = await started(t);
    await assert.rejects(runtime.sendMessage(new Ping('x'), new AgentId('nobody')), (e: unknown) => {
      assert.ok(e instanceof ToolbusError);
      assert.equal(e.code, 'invalid-request');
      assert.match(e.message, /no agent type 'nobody' is registered.*registered types: 'echo'/);
      return true;
    });
    await assert.rejects(runtime.sendMessage({ plain: true }, new AgentId('echo')), (e: unknown) => {
      assert.ok(e instanceof ToolbusError);
      assert.equal(e.code, 'unsupported');
      assert.match(
        e.message,
        /agent 'echo\/default' has no handler for message class 'Object'; it handles: 'Ping'/,
      );
      return true;
    });
    await assert.rejects(
      runtime.register('echo', () => new Echo()),
      { code: 'invalid-request' },
    );
    assert.throws(() => new AgentId('bad type'), { code: 'invalid-name' });
  });

  test('publishMessage reaches subscribers keyed by topic source, never the sender', async (t) => {
    const runtime = await started(t);
    const subscription = await runtime.subscribe('notes', 'echo');
    await runtime.addSubscription(new TypeSubscription('removed', 'echo', 'gone'));
    await runtime.removeSubscription('gone');
    await runtime.publishMessage(new Note('lost'), new TopicId('removed', 's2'));
    await runtime.publishMessage(new Note('relay'), new TopicId('notes', 's1'));
    await runtime.publishMessage(new Note('hello'), new TopicId('notes', 's2'));
    await runtime.publishMessage(new Note('ignored'), new TopicId('other', 's1'));
    await runtime.stopWhenIdle();
    const s1 = await runtime.getAgent<Echo>(new AgentId('echo', 's1'));
    const s2 = await runtime.getAgent<Echo>(new AgentId('echo', 's2'));
    // s1 published 'relayed' on its own topic: it is the only subscriber and the sender, so nobody gets it.
    assert.deepEqual(s1.notes, ['relay from outside']);
    assert.deepEqual(s2.notes, ['hello from outside']);
    await runtime.removeSubscription(subscription.id);
    await assert.rejects(runtime.removeSubscription(subscription.id), { code: 'invalid-request' });
  });

  test('published-message handler errors go to the hook, not the publisher', async (t) => {
    const errors: unknown[] = [];
    const runtime = new SingleThreadedAgentRuntime({
      hooks: { onHandlerError: ({ error }) => errors.push(error) },
    });
    t.after(() => runtime.close());
    await runtime.register('echo', () => new Echo());
    await runtime.addSubscription(new TypeSubscription('fails', 'echo'));
    runtime.start();
    await runtime.publishMessage(new Fail(), new TopicId('fails'));
    await runtime.stopWhenIdle();
    assert.equal(errors.length, 1);
    assert.equal((errors[0] as Error).message, 'handler failed on purpose');
  });

  test("the caller's signal cancels the handler's work and rejects with 'cancelled'", async (t) => {
    const runtime = await started(t);
    const controller = new AbortController();
    const pending = runtime.sendMessage(new Block(), new AgentId('echo'), { signal: controller.signal });
    const agent = await runtime.getAgent<Echo>(new AgentId('echo'));
    await new Promise((r) => setImmediate(r));
    controller.abort();
    await assert.rejects(pending, { name: 'ToolbusError', code: 'cancelled' });
    assert.equal((agent.aborted as ToolbusError).code, 'cancelled');
  });

  test('stop aborts handlers in flight; queued messages are rejected with closed', async () => {
    const runtime = new SingleThreadedAgentRuntime();
    await runtime.register('echo', () => new Echo());
    runtime.start();
    const blocked = runtime.sendMessage(new Block(), new AgentId('echo'));
    await new Promise((r) => setImmediate(r));
    await runtime.stop();
    await assert.rejects(blocked, { code: 'cancelled', message: /agent runtime stopped/ });
    const queued = runtime.sendMessage(new Ping('late'), new AgentId('echo'));
    await runtime.stop();
    await assert.rejects(queued, { code: 'closed' });
    await runtime.close();
    await runtime.close();
    await assert.rejects(runtime.sendMessage(new Ping('x'), new AgentId('echo')), { code: 'closed' });
  });

  test('start({ signal }) stops the runtime when the signal aborts', async () => {
    const runtime = new SingleThreadedAgentRuntime();
    await runtime.register('echo', () => new Echo());
    const controller = new AbortController();
    runtime.start({ signal: controller.signal });
    const blocked = runtime.sendMessage(new Block(), new AgentId('echo'));
    await new Promise((r) => setImmediate(r));
    controller.abort();
    await assert.rejects(blocked, { code: 'cancelled' });
    assert.equal(runtime.running, false);
    await runtime.close();
  });

  test('stop resolves even when a handler it aborts queues another message on its way out', async () => {
    class Reporter extends RoutedAgent {
      constructor() {
        super('reports its cancellation');
        this.messageHandler(Block, (_m, ctx: MessageContext) => {
          return new Promise<never>((_resolve, reject) => {
            ctx.signal.addEventListener('abort', () => {
              void this.publishMessage(new Note('cancelled'), new TopicId('notes'));
              reject(ctx.signal.reason);
            });
          });
        });
      }
    }
    const runtime = new SingleThreadedAgentRuntime();
    await runtime.register('reporter', () => new Reporter());
    runtime.start();
    const blocked = assert.rejects(runtime.sendMessage(new Block(), new AgentId('reporter')), {
      code: 'cancelled',
    });
    await new Promise((r) => setImmediate(r));
    await runtime.stop();
    await blocked;
    await runtime.close();
  });

  test('a hook that throws does not crash the runtime', async (t) => {
    const runtime = new SingleThreadedAgentRuntime({
      hooks: {
        onHandlerError: () => {
          throw new Error('broken hook');
        },
      },
    });
    t.after(() => runtime.close());
    await runtime.register('echo', () => new Echo());
    await runtime.addSubscription(new TypeSubscription('fails', 'echo'));
    runtime.start();
    await runtime.publishMessage(new Fail(), new TopicId('fails'));
    await runtime.stopWhenIdle(); // resolves: the publish finished despite the hook
  });
});
