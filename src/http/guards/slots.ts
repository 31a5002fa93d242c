export interface SlotsOptions {
  /** Slots one key may hold at once. */
  perKey: number;
  /** Slots all keys together may hold at once. @default no ceiling */
  ceiling?: number;
}

export interface Slots {
  /**
   * Takes a slot for `key`, answering the function that gives it back (calling it again
   * does nothing), or null when the key already holds `perKey` slots or all keys together
   * hold `ceiling`.
   */
  tryTake(key: string): (() => void) | null;
  /** Slots held by `key`, or by every key when none is given. */
  held(key?: string): number;
}

/**
 * Concurrency slots: anonymous requests per client address under a ceiling for all
 * addresses, and signed-in users' concurrent operations per user.
 *
 * These count live requests in this process's memory, so with N processes a caller may hold
 * up to N times `perKey`. That is deliberate (see docs/scaling.md): a slot exists exactly as
 * long as a request runs here and is freed when it ends, even if the process dies, which a
 * shared store could not promise without leases; a balancer spreads one caller across
 * processes anyway. Budgets over time (login failures) are shared; concurrency is not.
 */
export function createSlots({ perKey, ceiling = Infinity }: SlotsOptions): Slots {
  const byKey = new Map<string, number>();
  let total = 0;

  function release(key: string): void {
    const count = (byKey.get(key) ?? 0) - 1;
    // Keys are dropped at zero, so a map of addresses never outgrows the live requests.
    if (count > 0) byKey.set(key, count);
    else byKey.delete(key);
    total -= 1;
  }

  return {
    tryTake(key) {
      const count = byKey.get(key) ?? 0;
      if (count >= perKey || total >= ceiling) return null;
      byKey.set(key, count + 1);
      total += 1;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        release(key);
      };
    },
    held(key) {
      return key === undefined ? total : (byKey.get(key) ?? 0);
    },
  };
}
