/** Exit 2: the command line itself is wrong. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** Exit 1: the command ran and failed; the message says why, naming what is at fault. */
export class CommandError extends Error {
  override name = 'CommandError';
}
