/**
 * @module The overview's chart of calls and errors per bucket (the gateway's `rates`), drawn as SVG:
 * two lines over the last minutes, a y scale, and a text summary for screen readers.
 */
import type { RatePoint } from '../types.js';

const WIDTH = 1000;
const HEIGHT = 220;
const PAD = { left: 36, right: 12, top: 12, bottom: 24 };

/** A round top for the y axis: 1, 2, 5, 10, 20, 50, … at least `max`. */
function niceMax(max: number): number {
  if (max <= 1) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 5, 10]) if (step * magnitude >= max) return step * magnitude;
  return 10 * magnitude;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** Props of {@link RateChart}. */
export interface RateChartProps {
  points: RatePoint[];
  bucketMs: number;
}

/** Calls and errors per bucket as two lines. */
export function RateChart({ points, bucketMs }: RateChartProps) {
  const top = niceMax(Math.max(0, ...points.map((p) => Math.max(p.calls, p.errors))));
  const plotW = WIDTH - PAD.left - PAD.right;
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const x = (i: number): number =>
    PAD.left + (points.length <= 1 ? plotW : (i / (points.length - 1)) * plotW);
  const y = (v: number): number => PAD.top + plotH - (v / top) * plotH;
  const line = (pick: (p: RatePoint) => number): string =>
    points.map((p, i) => `${x(i).toFixed(1)},${y(pick(p)).toFixed(1)}`).join(' ');
  const total = points.reduce((sum, p) => sum + p.calls, 0);
  const errors = points.reduce((sum, p) => sum + p.errors, 0);
  const last = points[points.length - 1];
  const minutes = Math.round((points.length * bucketMs) / 60_000);
  const seconds = Math.round(bucketMs / 1000);
  const summary =
    `Over the last ${minutes} min: ${plural(total, 'call')}, ${plural(errors, 'error')}` +
    (last
      ? `; in the latest ${seconds} s: ${plural(last.calls, 'call')}, ${plural(last.errors, 'error')}.`
      : '.');
  const ticks = [0, top / 2, top];
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-labelledby="rate-chart-title rate-chart-desc">
        <title id="rate-chart-title">Call rate and error rate</title>
        <desc id="rate-chart-desc">{summary}</desc>
        {ticks.map((t) => (
          <g key={t} class="tick">
            <line x1={PAD.left} x2={WIDTH - PAD.right} y1={y(t)} y2={y(t)} />
            <text x={PAD.left - 6} y={y(t) + 4} text-anchor="end">
              {Number.isInteger(t) ? t : t.toFixed(1)}
            </text>
          </g>
        ))}
        <text class="axis-label" x={PAD.left} y={HEIGHT - 6}>
          −{minutes} min
        </text>
        <text class="axis-label" x={WIDTH - PAD.right} y={HEIGHT - 6} text-anchor="end">
          now
        </text>
        {points.length > 0 && (
          <>
            <polyline class="series calls" points={line((p) => p.calls)} />
            <polyline class="series errors" points={line((p) => p.errors)} />
          </>
        )}
      </svg>
      <figcaption>
        <span class="legend calls">calls</span> <span class="legend errors">errors</span> per {seconds} s ·{' '}
        {summary}
      </figcaption>
    </figure>
  );
}
