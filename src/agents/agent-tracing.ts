/**
 * @module The `invoke_agent {name}` span of an agent run (OpenTelemetry GenAI conventions). The run's
 * model calls (`chat`) and tool calls (`execute_tool`) are its children. With no SDK registered the run
 * goes as it is (see `tools/tracing.ts`).
 */
import {
  TraceAttribute,
  endSpanWithFailure,
  otel,
  runInSpan,
  startSpan,
  tracingEnabled,
} from '../tools/index.js';

/** Runs one agent run (`run`) inside its span; a failed run sets its code as `error.type`. */
export function traceAgentRun(agentName: string, run: () => Promise<string>): Promise<string> {
  if (!tracingEnabled()) return run();
  // INTERNAL: the agent runs in this process (a remote agent's call is the RPC layer's CLIENT span).
  const span = startSpan(`invoke_agent ${agentName}`, { kind: otel().SpanKind.INTERNAL });
  if (span.isRecording()) {
    span.setAttribute(TraceAttribute.OperationName, 'invoke_agent');
    span.setAttribute('gen_ai.agent.name', agentName);
  }
  let running: Promise<string>;
  try {
    running = runInSpan(span, run);
  } catch (error) {
    running = Promise.reject(error);
  }
  return running.then(
    (answer) => {
      span.end();
      return answer;
    },
    (error: unknown) => {
      endSpanWithFailure(span, error);
      throw error;
    },
  );
}
