/**
 * @module A durable, long-running tool service: `build-report` takes a second per section, streams each
 * section as it is written, and announces itself (no config needed). Its calls go through the bus's work
 * queue (`delivery: 'durable'`): they wait for a replica, survive a replica that dies (on NATS), and
 * their results are kept, so a caller can start one and come back for it.
 *
 * ```sh
 * toolbus up --service examples/report-service.ts
 * toolbus call build-report topic=sales --async     # prints the call id: task-…
 * toolbus call --result task-… --follow
 * ```
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { DynamicToolService, type MessageBus } from '../src/index.js';

/** How long one section takes, in ms (`REPORT_SECTION_MS`, default 1000). */
function sectionMs(): number {
  const ms = Number(process.env.REPORT_SECTION_MS ?? 1_000);
  return Number.isFinite(ms) && ms >= 0 ? ms : 1_000;
}

/** How long a report may go without a sign of life before another replica takes it over (`REPORT_ACK_WAIT_MS`, default 10 s). */
function ackWaitMs(): number {
  const ms = Number(process.env.REPORT_ACK_WAIT_MS ?? 10_000);
  return Number.isFinite(ms) && ms > 0 ? ms : 10_000;
}

/** The contract of `toolbus service <module>` and `toolbus up --service`: take the bus, return the service. */
export default function reportService(bus: MessageBus): DynamicToolService {
  return new DynamicToolService({
    bus,
    id: 'report-service',
    topic: 'report',
    delivery: 'durable',
    durable: { ackWaitMs: ackWaitMs() },
    announce: {
      tools: [
        {
          name: 'build-report',
          description:
            'Build a report on a topic, one section a second; start it with --async for a long one',
          // The same topic and sections give the same report: a repeated idempotency key is answered from the first.
          idempotent: true,
          arguments: [
            { name: 'topic', type: 'string', description: 'What the report is about' },
            {
              name: 'sections',
              type: 'integer',
              description: 'How many sections, 1 to 20 (default 3)',
              required: false,
            },
          ],
        },
      ],
    },
    invoke: async (user, _config, args, ctx) => {
      const topic = typeof args['topic'] === 'string' ? args['topic'] : 'everything';
      const sections = Math.min(
        20,
        Math.max(1, Number.isInteger(args['sections']) ? Number(args['sections']) : 3),
      );
      for (let i = 1; i <= sections; i++) {
        await sleep(sectionMs(), undefined, { signal: ctx.signal });
        await ctx.write(`Section ${i} of ${sections} on ${topic}: done.\n`);
      }
      return (
        `Report on ${topic} for ${user || 'anonymous'}: ${sections} sections` +
        (ctx.redelivered ? ` (finished on attempt ${ctx.attempt})` : '') +
        '.'
      );
    },
  });
}
