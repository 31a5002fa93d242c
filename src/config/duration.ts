import { accept, refuse, type Parsed } from './parsed.js';

/** The longest delay Node's timers honour; a longer one fires after 1 ms instead. */
export const MAX_TIMER_MS = 2_147_483_647;

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;

// One whole number and one unit, nothing else: no decimals, signs, spaces or compound
// forms like Go's `1h30m`, so every accepted value reads the same to every operator.
const DURATION = /^([0-9]+)(ms|s|m|h)$/;

export interface DurationOptions {
  /** Accept a zero duration (`0s`); only SVC_TENANT_MACHINE_GRACE does. */
  allowZero?: boolean;
  /** Largest accepted value in milliseconds; defaults to the largest safe integer. */
  maxMs?: number;
  /** Smallest accepted value in milliseconds, above zero; defaults to 1. */
  minMs?: number;
}

/** Parses `30s`, `1500ms`, `2m`, `1h` into milliseconds. */
export function parseDuration(text: string, options: DurationOptions = {}): Parsed<number> {
  const minMs = options.allowZero ? 0 : Math.max(1, options.minMs ?? 1);
  const maxMs = options.maxMs ?? Number.MAX_SAFE_INTEGER;
  const match = DURATION.exec(text);
  const ms = match ? Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS] : NaN;
  if (Number.isSafeInteger(ms) && ms >= minMs && ms <= maxMs) return accept(ms);
  return refuse(describe(minMs, maxMs));
}

function describe(minMs: number, maxMs: number): string {
  const floor =
    minMs === 0 ? 'zero or more' : minMs === 1 ? 'above zero' : `of at least ${minMs}ms`;
  const ceiling = maxMs === Number.MAX_SAFE_INTEGER ? '' : ` and at most ${maxMs}ms`;
  return `must be a duration ${floor}${ceiling}, a whole number followed by ms, s, m or h (such as 30s)`;
}
