import { randomUUID } from 'node:crypto';
import { capabilitiesOf, type AccessCatalogue } from '../auth/access.js';
import type { Config } from '../config.js';
import { createContext, type Context } from '../context.js';
import type { Database, Db } from '../db/client.js';
import type { EventBus } from '../events/bus.js';
import type { Logger } from '../log.js';
import type { User } from '../users/tables.js';

/** A command serves no event streams: nothing subscribes, and asking to is a bug. */
const noStreams: EventBus = {
  subscribe() {
    throw new Error('a command serves no event streams');
  },
  size: () => 0,
  endSubscriptions() {},
  close: async () => {},
};

export interface CommandContextOptions {
  config: Config;
  database: Database;
  access: AccessCatalogue;
  log: Logger;
}

/**
 * The context a domain service expects, for a command acting as `user` with a session's
 * rights (no token, so no scope narrows it). The services write through `db` (a
 * transaction of the command's), so their rows and events commit or roll back with it.
 */
export function commandContext(options: CommandContextOptions, db: Db, user: User): Context {
  const operation = new AbortController();
  return createContext({
    config: options.config,
    database: { ...options.database, db },
    log: options.log,
    requestId: randomUUID(),
    actor: {
      userId: user.id,
      workspaceId: user.workspaceId,
      role: user.role,
      capabilities: capabilitiesOf(options.access, user.role),
      token: null,
      sessionId: null,
    },
    access: options.access,
    clientAddress: '127.0.0.1',
    headers: new Headers(),
    responseCookies: [],
    signal: operation.signal,
    events: noStreams,
    cancel: (reason) => operation.abort(reason),
  });
}
