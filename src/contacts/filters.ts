import type { InputRef } from '@pothos/core';
import type { SQL } from 'drizzle-orm';
import type { Actor } from '../context.js';
import type { CacheScope } from '../workspaces/cache.js';

/**
 * What a filter's condition may use: the caller, its workspace and the process's database
 * and configuration (the workspace cache takes these). A graph request's signed-in context
 * is one; so is an export's download, which has no graph context.
 */
export interface ContactFilterScope extends CacheScope {
  actor: Actor;
  workspaceId: string;
}

/**
 * A filter a plugin adds to `contactPage`: an argument of its own, turned into a condition
 * on the `contacts` table for the caller's workspace (the fields plugin's `field`). The
 * page, its total and its cost treat it like the core's `q` and `channels`.
 */
export interface ContactFilterDeclaration<T = unknown> {
  /** The argument's name on `contactPage`. */
  argument: string;
  /** Its input type, defined by the plugin. */
  type: InputRef<T>;
  description: string;
  /** What it adds to the page's cost in the complexity model (SEARCH for a substring). */
  cost(value: T): number;
  /** The condition over `contacts`; refuses a value it cannot use. */
  condition(scope: ContactFilterScope, value: T): Promise<SQL>;
}

const declared: ContactFilterDeclaration[] = [];

/** Declares a contact filter; call it when the plugin's backend loads, before the schema is built. */
export function registerContactFilter<T>(declaration: ContactFilterDeclaration<T>): void {
  if (declared.some((filter) => filter.argument === declaration.argument)) {
    throw new Error(`contactPage already takes an argument ${declaration.argument}`);
  }
  declared.push(declaration as ContactFilterDeclaration);
}

/** The declared filters, in declaration order. */
export function contactFilters(): readonly ContactFilterDeclaration[] {
  return declared;
}

/** The declared filters an operation's arguments use, with their values. */
export function usedFilters(args: Readonly<Record<string, unknown>>) {
  return declared
    .filter((filter) => args[filter.argument] !== undefined && args[filter.argument] !== null)
    .map((filter) => ({ filter, value: args[filter.argument] }));
}
