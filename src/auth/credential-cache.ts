import type { Actor } from '../context.js';
import type { Database } from '../db/client.js';
import type { Logger } from '../log.js';
import {
  parseRevocation,
  REVOCATIONS_CHANNEL,
  revokes,
  watchAnnouncements,
  type Revocation,
} from '../events/revocations.js';

// A credential read on every request costs a statement and a round trip, as much as a
// cheap operation itself (docs/performance.md). A serving process keeps what it read of a
// credential in use (read a second time within HELD_MS: one seen once is read afresh
// each time) for a few seconds, and takes it back the moment anything may have ended it
// (SPEC 5 wants revocation to take effect at once, in every process):
//  - every change that ends a credential (revoking a token, signing out, disabling an
//    account, changing its role, resetting its password, deactivating a workspace)
//    already announces itself on `svc_revocations` in its transaction, which PostgreSQL
//    delivers at commit to every listening process; a notice drops what it names;
//  - in the announcing process the notice arrives only after the commit has answered, so
//    the announcement itself drops what it names and keeps those credentials uncached
//    until its notice comes back (or for a minute, when the change rolled back);
//  - a read that began before a drop is not kept (a revocation may have committed after
//    it read the row);
//  - a notice sent while the listening connection was down is lost: when it listens
//    again, everything held is dropped; meanwhile what is held lives at most HELD_MS;
//  - expiry needs no notice: a held credential past its `expiresAt` is read anew.
// The secret is still hashed and compared on every request; only the row is kept.

/** How long a credential's row is used without reading it again. */
export const HELD_MS = 5_000;
/** Most credentials held; past it the oldest kept is dropped first. */
const MAX_HELD = 10_000;
/** How long an announcement keeps its credentials uncached if its notice never comes. */
const PENDING_MS = 60_000;

/** A credential's row as the lookup read it, and the caller it signs in. */
export interface HeldCredential {
  actor: Actor;
  secretHash: Buffer;
  /** A token's last recorded use; the lookup writes it again once a minute. */
  lastUsedAt: Date | null;
}

interface Entry {
  held: HeldCredential;
  until: number;
}

/** A credential's key: its kind and its row. */
export function credentialKey(kind: 'token' | 'session', workspaceId: string, id: string) {
  return `${kind}:${workspaceId}:${id}`;
}

/** `map`, its oldest entry dropped first when it is full and `key` would be a new one. */
function bounded<V>(map: Map<string, V>, key: string): Map<string, V> {
  if (map.size >= MAX_HELD && !map.has(key)) {
    const oldest = map.keys().next();
    if (!oldest.done) map.delete(oldest.value);
  }
  return map;
}

export class CredentialCache {
  private readonly held = new Map<string, Entry>();
  /** When a credential not held was last read, by key. */
  private readonly seen = new Map<string, number>();
  /**
   * Announced by this process, notice not back yet: by payload, how many such
   * announcements wait and until when they count.
   */
  private readonly pending = new Map<
    string,
    { revocation: Revocation; waiting: number; until: number }
  >();
  private listening = false;
  /** Moves on every drop: a read begun before one is not kept. */
  private generation = 0;

  /** `now`: the clock, in milliseconds; tests bring their own. */
  constructor(private readonly now: () => number = Date.now) {}

  /** A mark to hand back to `keep`, taken before reading a credential. */
  mark(): number {
    return this.generation;
  }

  /** The held credential under `key`, while fresh, unexpired and not being revoked. */
  read(key: string): HeldCredential | undefined {
    const entry = this.held.get(key);
    if (!entry) return undefined;
    const now = this.now();
    const expiresAt = entry.held.actor.expiresAt?.getTime() ?? Infinity;
    if (entry.until <= now || expiresAt <= now || this.isPending(entry.held.actor, now)) {
      this.held.delete(key);
      return undefined;
    }
    return entry.held;
  }

  /**
   * Keeps a credential just read, unless something was dropped since `mark`; answers it
   * (whoever holds it may note a use on it).
   */
  keep(key: string, credential: HeldCredential, mark: number): HeldCredential {
    const now = this.now();
    if (!this.listening || mark !== this.generation || this.isPending(credential.actor, now)) {
      return credential;
    }
    // Held from its second read within HELD_MS: a credential seen once is read afresh.
    const seen = this.seen.get(key);
    if (seen === undefined || seen <= now - HELD_MS) {
      bounded(this.seen, key).set(key, now);
      return credential;
    }
    this.seen.delete(key);
    bounded(this.held, key).set(key, { held: credential, until: now + HELD_MS });
    return credential;
  }

  /** Drops what `revocation` names. */
  forget(revocation: Revocation): void {
    this.generation += 1;
    for (const [key, entry] of this.held) {
      if (revokes(revocation, entry.held.actor)) this.held.delete(key);
    }
  }

  /** Drops everything held. */
  clear(): void {
    this.generation += 1;
    this.held.clear();
    this.seen.clear();
  }

  /** This process announced `revocation` in a transaction not yet committed. */
  announced(revocation: Revocation, payload: string): void {
    const waiting = (this.pending.get(payload)?.waiting ?? 0) + 1;
    this.pending.set(payload, { revocation, waiting, until: this.now() + PENDING_MS });
    this.forget(revocation);
  }

  /** A notice on `svc_revocations`, from any process. */
  noticed(payload: string): void {
    const announcement = this.pending.get(payload);
    if (announcement && --announcement.waiting === 0) this.pending.delete(payload);
    const revocation = parseRevocation(payload);
    // One unreadable notice may have named anything held.
    if (revocation) this.forget(revocation);
    else this.clear();
  }

  /** Listening (again): notices from now on arrive; any sent meanwhile were lost. */
  listened(): void {
    this.listening = true;
    this.clear();
  }

  /** Not listening: nothing is held, and nothing read is kept. */
  stopped(): void {
    this.listening = false;
    this.clear();
  }

  private isPending(actor: Actor, now: number): boolean {
    if (this.pending.size === 0) return false;
    for (const [payload, { revocation, until }] of this.pending) {
      if (until <= now) this.pending.delete(payload);
      else if (revokes(revocation, actor)) return true;
    }
    return false;
  }
}

export interface HeldCredentials {
  cache: CredentialCache;
  /** Stops listening; nothing is held afterwards. */
  close(): Promise<void>;
}

/**
 * The serving process's credential cache, listening on `svc_revocations` (on the
 * connection postgres.js keeps for LISTEN, which listens again by itself after a
 * reconnect) and watching this process's own announcements.
 */
export async function holdCredentials(
  database: Database,
  log: Logger,
  options: { now?: () => number } = {},
): Promise<HeldCredentials> {
  const cache = new CredentialCache(options.now);
  const unwatch = watchAnnouncements((revocation, payload) => cache.announced(revocation, payload));
  let listens = 0;
  try {
    const listener = await database.sql.listen(
      REVOCATIONS_CHANNEL,
      (payload) => cache.noticed(payload),
      () => {
        listens += 1;
        if (listens > 1) log.debug('credential cache listening again, emptied');
        cache.listened();
      },
    );
    return {
      cache,
      async close() {
        cache.stopped();
        unwatch();
        await listener.unlisten();
      },
    };
  } catch (error) {
    unwatch();
    throw error;
  }
}
