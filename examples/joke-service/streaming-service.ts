/**
 * @module The streamed variant of the joke service: the same queues and descriptors, but the reply is
 * sent in chunks of a few words (`end_of_stream: false`), then an empty last response.
 *
 * ```sh
 * toolbus service examples/joke-service/streaming-service.ts --nats nats://127.0.0.1:4222
 * ```
 */
import type { DynamicToolService, MessageBus } from '../../src/index.js';
import { createJokeService } from './service.js';

/** The contract of `toolbus service <module>`: take the bus, return the service. */
export default function streamingJokeService(bus: MessageBus): DynamicToolService {
  return createJokeService(bus, { streaming: true });
}
