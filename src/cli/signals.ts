/** What stops a running command: a terminal's Ctrl-C, an orchestrator, a closed terminal. */
const STOP_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;

/**
 * A signal this soon after the first is the same request: `npm start` forwards the
 * terminal's SIGINT to its script, which the terminal already sent it (docs/decisions.md).
 */
const SAME_REQUEST_MS = 1_000;

/**
 * Resolves on the first SIGTERM, SIGINT or SIGHUP; another one later than a second after
 * it ends the process at once, with exit code 1. The listeners stay for the process's
 * life: were there a moment with none, a signal arriving then would kill it outright.
 */
export function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    let first: number | null = null;
    const onSignal = (signal: NodeJS.Signals) => {
      if (first === null) {
        first = Date.now();
        resolve(signal);
      } else if (Date.now() - first >= SAME_REQUEST_MS) process.exit(1);
    };
    for (const name of STOP_SIGNALS) process.on(name, onSignal);
  });
}
