/**
 * Human approval and resumable runs in `ToolUseAgent` with a run store, on a scripted model: approve,
 * deny, edited arguments, timeout, the step's other calls running meanwhile, a run left paused by its
 * caller and resumed by another agent (another "process") once decided, and the fail-closed default
 * without a run store.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { FunctionExecutionResultMessage, ScriptedChatCompletionClient } from '../models/index.js';
import type { LLMMessage } from '../models/index.js';
import { MemoryConfigStore } from '../config/index.js';
import { MemoryBus } from '../bus/index.js';
import { FunctionTool, ToolSet } from '../tools/index.js';
import { RunStore, type ApprovalRequest } from '../runs/index.js';
import type { AgentEvent } from './agent.js';
import { ToolUseAgent } from './tool-use-agent.js';
import { AgentService } from './agent-service.js';
import { AgentClient } from './agent-client.js';

function tools(log: string[]): ToolSet {
  const remove = new FunctionTool(
    ({ path }) => {
      log.push(`remove ${path}`);
      return `removed ${path}`;
    },
    {
      name: 'remove',
      description: 'Remove a file.',
      parameters: z.object({ path: z.string() }),
      needsApproval: true,
    },
  );
  const pay = new FunctionTool(
    ({ amount }) => {
      log.push(`pay ${amount}`);
      return `paid ${amount}`;
    },
    {
      name: 'pay',
      description: 'Pay an amount.',
      parameters: z.object({ amount: z.number() }),
      needsApproval: ({ amount }) => amount > 100,
    },
  );
  const look = new FunctionTool(
    ({ path }) => {
      log.push(`look ${path}`);
      return `${path} is there`;
    },
    { name: 'look', description: 'Look at a file.', parameters: z.object({ path: z.string() }) },
  );
  return new ToolSet([remove, pay, look]);
}

/** A model that calls `calls` first, then answers with the results it got. */
function model(calls: { id: string; name: string; arguments: string }[]): ScriptedChatCompletionClient {
  const answer = (messages: readonly LLMMessage[]): string => {
    const last = messages[messages.length - 1];
    assert.ok(last instanceof FunctionExecutionResultMessage);
    return `done: ${last.content.map((r) => `${r.name}=${r.content}`).join(' | ')}`;
  };
  return new ScriptedChatCompletionClient([calls, answer]);
}

/** Resolves with the first approval event. */
function approvalOf(events: AgentEvent[]): Promise<ApprovalRequest> {
  return new Promise((resolve) => {
    const timer = setInterval(() => {
      const found = events.find((e) => e.type === 'approval');
      if (found && found.type === 'approval') {
        clearInterval(timer);
        resolve(found.approval);
      }
    }, 5);
  });
}

describe('ToolUseAgent approvals', () => {
  test("a call that needs approval waits; the step's other call runs meanwhile; approving runs it and the run finishes", async () => {
    const log: string[] = [];
    const store = new MemoryConfigStore();
    const bus = new MemoryBus();
    const published: string[] = [];
    await bus.subscribe('approval-requests', (m) => void published.push(new TextDecoder().decode(m.body)));
    const runs = new RunStore(store, { bus });
    const agent = new ToolUseAgent({
      model: model([
        { id: 'c1', name: 'remove', arguments: '{"path":"/tmp/a"}' },
        { id: 'c2', name: 'look', arguments: '{"path":"/tmp/b"}' },
      ]),
      tools: tools(log),
      runs,
    });
    const events: AgentEvent[] = [];
    const answer = agent.run('clean up', {
      user: 'alice',
      principal: 'carol',
      runId: 'run-1',
      onEvent: (e) => events.push(e),
    });
    const request = await approvalOf(events);
    assert.deepEqual(
      {
        run: request.runId,
        tool: request.tool,
        args: request.arguments,
        user: request.user,
        principal: request.principal,
        status: request.status,
      },
      {
        run: 'run-1',
        tool: 'remove',
        args: { path: '/tmp/a' },
        user: 'alice',
        principal: 'carol',
        status: 'pending',
      },
    );
    assert.match(request.id, /^apr-[0-9a-f]{24}$/);
    assert.ok(request.expiresAt, 'the default timeout sets an expiry');
    // Stored, published, and the run saved as paused with the other call finished.
    assert.equal((await runs.approval(request.id))?.status, 'pending');
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(JSON.parse(published[0]!).id, request.id);
    assert.deepEqual(log, ['look /tmp/b']);
    const paused = await runs.run('run-1');
    assert.equal(paused?.status, 'paused');
    assert.deepEqual(
      paused?.current?.calls.map((c) => [c.name, c.result?.content]),
      [
        ['remove', undefined],
        ['look', '/tmp/b is there'],
      ],
    );
    await runs.decide(request.id, { decision: 'approve', by: 'bob' });
    assert.equal(await answer, 'done: remove=removed /tmp/a | look=/tmp/b is there');
    assert.deepEqual(log, ['look /tmp/b', 'remove /tmp/a']);
    // The step's other call may finish before or after the request is made; the approved one only after.
    const order = events.map((e) => (e.type === 'observation' ? `observation:${e.toolName}` : e.type));
    assert.deepEqual([order[0], order[order.length - 1]], ['thought', 'answer']);
    assert.deepEqual([...order].sort(), [
      'answer',
      'approval',
      'observation:look',
      'observation:remove',
      'thought',
    ]);
    assert.ok(order.indexOf('approval') < order.indexOf('observation:remove'));
    const done = await runs.run('run-1');
    assert.equal(done?.status, 'done');
    assert.equal(done?.answer, await answer);
    assert.equal(done?.owner, undefined);
    // A second decision is refused, naming the first.
    await assert.rejects(runs.decide(request.id, { decision: 'deny', by: 'dave' }), {
      code: 'already-decided',
      message: /was already approved by bob/,
    });
    runs.close();
  });

  test('a denial reaches the model as an error result "denied by NAME: reason", and the tool never runs', async () => {
    const log: string[] = [];
    const runs = new RunStore(new MemoryConfigStore());
    const agent = new ToolUseAgent({
      model: model([{ id: 'c1', name: 'remove', arguments: '{"path":"/etc"}' }]),
      tools: tools(log),
      runs,
    });
    const events: AgentEvent[] = [];
    const answer = agent.run('clean /etc', { onEvent: (e) => events.push(e) });
    const request = await approvalOf(events);
    await runs.decide(request.id, { decision: 'deny', by: 'bob', reason: 'not /etc' });
    assert.equal(await answer, 'done: remove=denied by bob: not /etc');
    assert.deepEqual(log, []);
    const observation = events.find((e) => e.type === 'observation');
    assert.ok(observation?.type === 'observation' && observation.isError && observation.code === 'denied');
    runs.close();
  });

  test('approved with edited arguments: the tool runs with them and the model sees the call as run', async () => {
    const log: string[] = [];
    const runs = new RunStore(new MemoryConfigStore());
    const m = model([{ id: 'c1', name: 'remove', arguments: '{"path":"/"}' }]);
    const agent = new ToolUseAgent({ model: m, tools: tools(log), runs });
    const events: AgentEvent[] = [];
    const answer = agent.run('clean', { onEvent: (e) => events.push(e) });
    const request = await approvalOf(events);
    await runs.decide(request.id, { decision: 'approve', by: 'bob', arguments: { path: '/tmp' } });
    assert.equal(await answer, 'done: remove=removed /tmp');
    assert.deepEqual(log, ['remove /tmp']);
    const replayed = m.calls[1]!.messages.find((x) => x.type === 'AssistantMessage');
    assert.deepEqual(replayed?.content, [{ id: 'c1', name: 'remove', arguments: '{"path":"/tmp"}' }]);
    runs.close();
  });

  test('a predicate decides per call: a small payment runs at once, a large one waits; an unanswered request is denied after approvalTimeoutMs, saying so', async () => {
    const log: string[] = [];
    const runs = new RunStore(new MemoryConfigStore());
    const agent = new ToolUseAgent({
      model: model([
        { id: 'c1', name: 'pay', arguments: '{"amount":5}' },
        { id: 'c2', name: 'pay', arguments: '{"amount":500}' },
      ]),
      tools: tools(log),
      runs,
      approvalTimeoutMs: 150,
    });
    const events: AgentEvent[] = [];
    const answer = await agent.run('pay', { onEvent: (e) => events.push(e) });
    assert.equal(
      answer,
      'done: pay=paid 5 | pay=denied by toolbus: nobody decided within 150 ms (approvalTimeoutMs)',
    );
    assert.deepEqual(log, ['pay 5']);
    assert.equal(events.filter((e) => e.type === 'approval').length, 1);
    const [request] = await runs.approvals({ status: 'denied' });
    assert.equal(request?.decision?.timedOut, true);
    await assert.rejects(runs.decide(request!.id, { decision: 'approve', by: 'bob' }), {
      code: 'already-decided',
      message: /nobody decided before it expired/,
    });
    runs.close();
  });

  test('without a run store, a call that needs approval is refused with approval-required (fail closed)', async () => {
    const log: string[] = [];
    const agent = new ToolUseAgent({
      model: model([{ id: 'c1', name: 'remove', arguments: '{"path":"/x"}' }]),
      tools: tools(log),
    });
    assert.match(
      await agent.run('clean'),
      /^done: remove=tool 'remove' needs a person's approval before it runs/,
    );
    assert.deepEqual(log, []);
    const direct = await tools(log).call('remove', { path: '/x' });
    assert.equal(direct.error?.code, 'approval-required');
    const approved = await tools(log).call('remove', { path: '/x' }, { approvedBy: 'bob' });
    assert.equal(approved.content, 'removed /x');
  });

  test('a run whose caller went away stays paused, owned by nobody; another service resumes it once decided and finishes with the same answer', async () => {
    const log: string[] = [];
    const store = new MemoryConfigStore();
    const bus = new MemoryBus();
    const calls = [{ id: 'c1', name: 'remove', arguments: '{"path":"/tmp/a"}' }];
    // Replica A: takes the question, pauses, and its client goes away.
    const runsA = new RunStore(store, { bus });
    const serviceA = new AgentService({
      bus,
      runs: runsA,
      agent: new ToolUseAgent({ model: model(calls), tools: tools(log), runs: runsA }),
    });
    await serviceA.start();
    const client = new AgentClient(bus);
    const controller = new AbortController();
    const events: string[] = [];
    const asked = client.ask('clean up', {
      runId: 'run-9',
      principal: 'carol',
      signal: controller.signal,
      onEvent: (e) => {
        events.push(e.type);
        if (e.type === 'approval') controller.abort();
      },
    });
    await assert.rejects(asked, { code: 'cancelled' });
    assert.deepEqual(events, ['thought', 'approval']);
    let saved = await runsA.run('run-9');
    for (let i = 0; i < 50 && saved?.owner !== undefined; i++) {
      await new Promise((r) => setTimeout(r, 10));
      saved = await runsA.run('run-9');
    }
    assert.equal(saved?.status, 'paused');
    assert.equal(saved?.owner, undefined, 'a paused run without its caller holds nothing');
    await serviceA.close();
    runsA.close();
    // Replica B (a fresh model: the script starts again, as after a restart) resumes on the decision.
    const runsB = new RunStore(store, { bus });
    const modelB = new ScriptedChatCompletionClient([
      (messages) => {
        const last = messages[messages.length - 1] as FunctionExecutionResultMessage;
        return `done: ${last.content.map((r) => `${r.name}=${r.content}`).join(' | ')}`;
      },
    ]);
    const serviceB = new AgentService({
      bus,
      runs: runsB,
      agent: new ToolUseAgent({ model: modelB, tools: tools(log), runs: runsB }),
    });
    await serviceB.start();
    const [request] = await runsB.approvals({ status: 'pending' });
    await runsB.decide(request!.id, { decision: 'approve', by: 'bob' });
    let finished = await runsB.run('run-9');
    for (let i = 0; i < 200 && finished?.status !== 'done'; i++) {
      await new Promise((r) => setTimeout(r, 10));
      finished = await runsB.run('run-9');
    }
    assert.equal(finished?.status, 'done');
    assert.equal(finished?.answer, 'done: remove=removed /tmp/a');
    assert.deepEqual(log, ['remove /tmp/a']);
    assert.deepEqual(
      finished?.events.map((e) => e.type),
      ['thought', 'approval', 'observation', 'answer'],
    );
    await serviceB.close();
    await client.close();
    runsB.close();
    await bus.close();
  });
});
