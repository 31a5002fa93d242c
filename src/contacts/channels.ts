import { refuse } from '../errors.js';
import { checkText, TEXT_MAX } from '../limits.js';

/**
 * A channel identities live on. The core writes `email` and `phone`; a plugin may declare
 * further channels, and one whose identities only arrive from its platform (a chat
 * handle) is not writable through the graph.
 */
export interface ChannelDefinition {
  name: string;
  /** Whether `createContact` and `addContactIdentity` may add identities on it. */
  writable: boolean;
  /** What makes two identifiers the same (`identifierKey`); '' when nothing identifies. */
  key(identifier: string): string;
}

const trimmed = (identifier: string) => identifier.trim();

export const coreChannels: readonly ChannelDefinition[] = [
  { name: 'email', writable: true, key: (identifier) => identifier.trim().toLowerCase() },
  { name: 'phone', writable: true, key: phoneKey },
];

const catalogue = new Map<string, ChannelDefinition>(coreChannels.map((c) => [c.name, c]));

/** The digits of a number, with a leading `+` kept: `+1 (555) 010-2030` → `+15550102030`. */
export function phoneKey(identifier: string): string {
  const text = identifier.trim();
  const digits = text.replace(/\D/g, '');
  return digits && text.startsWith('+') ? `+${digits}` : digits;
}

/** Declares a plugin's channel; by default its identifiers compare trimmed, as written. */
export function registerChannel(
  definition: Omit<ChannelDefinition, 'key'> & Partial<Pick<ChannelDefinition, 'key'>>,
): void {
  const name = channelName(definition.name);
  if (catalogue.has(name)) throw new Error(`channel ${name} is already declared`);
  catalogue.set(name, { ...definition, name, key: definition.key ?? trimmed });
}

/** Every declared channel's name: the core's, then plugins' in the order they loaded. */
export function channelNames(): string[] {
  return [...catalogue.keys()];
}

export function findChannel(name: string): ChannelDefinition | undefined {
  return catalogue.get(channelName(name));
}

/** Channel names compare trimmed and lower-cased (`Email` is `email`). */
export function channelName(name: string): string {
  return name.trim().toLowerCase();
}

export interface IdentityInput {
  channel: string;
  identifier: string;
  displayName?: string | null;
}

export interface NormalisedIdentity {
  channel: string;
  identifier: string;
  identifierKey: string;
  displayName: string | null;
}

/**
 * Checks an identity a caller writes and computes its key. The identifier is stored
 * trimmed; an empty display name is no display name.
 */
export function normaliseIdentity(input: IdentityInput): NormalisedIdentity {
  const name = channelName(input.channel);
  if (!name) throw refuse('identity_channel_required');
  const identifier = input.identifier.trim();
  if (!identifier) throw refuse('identity_identifier_required');
  checkText(identifier, 'identifier', TEXT_MAX.identifier);
  const channel = catalogue.get(name);
  if (!channel) throw refuse('channel_unknown', { channel: name });
  if (!channel.writable) throw refuse('channel_not_writable');
  const identifierKey = channel.key(identifier);
  // Given, but naming no one (a phone number with no digit in it).
  if (!identifierKey) throw refuse('identity_identifier_malformed', { channel: name });
  const displayName = input.displayName?.trim() || null;
  if (displayName) checkText(displayName, 'displayName', TEXT_MAX.displayName);
  return { channel: name, identifier, identifierKey, displayName };
}
