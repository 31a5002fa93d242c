import type { Actor } from '../context.js';
import { refuse } from '../errors.js';
import type { LoadedPlugin } from '../plugin-host/host.js';

export type AccessLevel = 'read' | 'write';
/** `area:access`, e.g. `contacts:write`. */
export type Scope = `${string}:${AccessLevel}`;

/** Areas the core's schema declares (SPEC 5); plugins add theirs. */
export const coreAreas = ['users', 'contacts', 'tasks', 'webhooks', 'meta'] as const;
/**
 * `erase_records` (not in SPEC 2.2): erasing and merging contacts, and deleting any task
 * rather than only one's own (docs/contacts.md).
 */
export const ERASE_RECORDS = 'erase_records';
export const coreCapabilities = ['manage_users', 'manage_webhooks', ERASE_RECORDS] as const;
/**
 * Stock roles (SPEC 2.2): an admin manages users and webhooks and erases records; a member
 * works records.
 */
export const coreRoles: Record<string, readonly string[]> = {
  admin: ['manage_users', 'manage_webhooks', ERASE_RECORDS],
  member: [],
};
/** Stored in `api_tokens.scopes` for a token minted without `-scope`: every area. */
export const EVERY_AREA = '*';

/** Areas, capabilities and roles of the deployment: the core's and every plugin's. */
export interface AccessCatalogue {
  areas: ReadonlySet<string>;
  capabilities: ReadonlySet<string>;
  /** Role name to the capabilities it holds, in declaration order (stock roles first). */
  roles: ReadonlyMap<string, ReadonlySet<string>>;
}

export function buildCatalogue(plugins: readonly LoadedPlugin[]): AccessCatalogue {
  const areas = new Set<string>(coreAreas);
  const capabilities = new Set<string>(coreCapabilities);
  const roles = new Map(Object.entries(coreRoles).map(([name, caps]) => [name, new Set(caps)]));
  for (const { definition } of plugins) {
    for (const area of definition?.areas ?? []) areas.add(area);
    for (const capability of definition?.capabilities ?? []) capabilities.add(capability);
    for (const [name, caps] of Object.entries(definition?.roles ?? {})) {
      const unknown = caps.filter((c) => !capabilities.has(c));
      if (unknown.length > 0) {
        throw new Error(
          `plugin ${definition?.id}: role ${name} names unknown capabilities ${unknown.join(', ')}`,
        );
      }
      // A role the core or an earlier plugin declared gains the capabilities (a plugin
      // grants its own to the stock admin); a new name is a new role.
      const role = roles.get(name);
      if (role) for (const capability of caps) role.add(capability);
      else roles.set(name, new Set(caps));
    }
  }
  return { areas, capabilities, roles };
}

/** The capabilities a role holds; none for no role or a role the deployment lost. */
export function capabilitiesOf(
  catalogue: AccessCatalogue,
  role: string | null,
): ReadonlySet<string> {
  return (role && catalogue.roles.get(role)) || new Set();
}

/** Every role whose capabilities `held` already includes (SPEC 2.2 `grantable`). */
export function grantableRoles(catalogue: AccessCatalogue, held: ReadonlySet<string>): string[] {
  return [...catalogue.roles]
    .filter(([, caps]) => [...caps].every((c) => held.has(c)))
    .map(([name]) => name);
}

/**
 * Whether the caller may use `scope`: a session always (never narrowed by scopes); a
 * token when its scopes reach it. For a plugin route that reads another area than its own.
 */
export function callerHolds(actor: Actor, scope: Scope): boolean {
  return !actor.token || scopesAllow(actor.token.scopes, scope);
}

/** Whether a token's scopes reach `scope`; write access includes read. */
export function scopesAllow(scopes: ReadonlySet<string> | null, scope: Scope): boolean {
  if (scopes === null || scopes.has(EVERY_AREA)) return true;
  if (scopes.has(scope)) return true;
  const [area] = scope.split(':');
  return scope.endsWith(':read') && scopes.has(`${area}:write`);
}

/** What a root field demands of its caller (NOTES: checked on the fields an operation starts from). */
export interface AccessRule {
  /** The area and access a token must hold. A session is never narrowed by scopes. */
  scope?: Scope;
  /**
   * A second area the field reads, a token must hold too (an export of contacts from the
   * importer: `imports:read` and `contacts:read`).
   */
  alsoScope?: Scope;
  /** The capability the caller's role must hold. */
  capability?: string;
  /** Only a browser session may call it; a token never can (token management). */
  session?: true;
}

/**
 * Throws the refusal SPEC 5 and 7.1 describe, or returns when the caller may go on. The
 * token is checked first, so a caller lacking both is told about the scope.
 */
export function checkAccess(actor: Actor | null, rule: AccessRule): asserts actor is Actor {
  if (!actor) throw refuse('authentication_required');
  if (rule.session && actor.token) throw refuse('session_required');
  if (rule.scope && actor.token && !scopesAllow(actor.token.scopes, rule.scope)) {
    throw refuse('scope_missing', { scope: rule.scope }, { extensions: { scope: rule.scope } });
  }
  if (rule.alsoScope && actor.token && !scopesAllow(actor.token.scopes, rule.alsoScope)) {
    const scope = rule.alsoScope;
    throw refuse('scope_missing', { scope }, { extensions: { scope } });
  }
  if (rule.capability && !actor.capabilities.has(rule.capability)) {
    throw refuse(
      'capability_missing',
      { scope: rule.scope ?? null, capability: rule.capability },
      { extensions: { capability: rule.capability } },
    );
  }
}
