import type { SQL } from 'drizzle-orm';
import {
  getArgumentValues,
  getNamedType,
  isObjectType,
  type GraphQLField,
  type GraphQLObjectType,
  type GraphQLResolveInfo,
} from 'graphql';
import type { Context } from '../context.js';
import { selected } from './selection.js';

/**
 * What a field's rows look like as one JSON column of its parent's row (a contact's open
 * tasks in the contact's own statement), declared by the domain that adds the field, in
 * the field's `extensions.readAhead`. The parent's resolver reads the columns of the
 * fields an operation selects; each rides on the parent's row under its name, and the
 * field's resolver answers from there (no statement, no loader, no promise), or reads it
 * itself when the row does not carry it.
 */
export interface ReadAhead<V extends Record<string, unknown> = Record<string, unknown>> {
  /** The column's name in the parent's row. */
  name: string;
  /** Its part of the statement's shape, when variants share the name. @default name */
  shape?: string;
  /** The column, over the parent's row; the field's arguments come as `values`' placeholders. */
  column: SQL;
  /** The placeholders' values for the field's arguments (may refuse them: no read-ahead). */
  values(args: Record<string, unknown>, ctx: Context): V;
  /**
   * The read-ahead to use for this operation, when the column may carry less than the
   * whole row (what the operation asks of the field's type). @default this one
   */
  choose?(info: GraphQLResolveInfo): ReadAhead<V>;
}

/** A read-ahead the operation asks for, with its placeholders' values. */
export interface ReadAheadChoice {
  readAhead: ReadAhead;
  values: Record<string, unknown>;
}

const declared = new WeakMap<GraphQLObjectType, [GraphQLField<unknown, unknown>, ReadAhead][]>();

/** The fields of `type` that declare a read-ahead (found once per type). */
function readAheadFields(type: GraphQLObjectType): [GraphQLField<unknown, unknown>, ReadAhead][] {
  let fields = declared.get(type);
  if (!fields) {
    fields = Object.values(type.getFields()).flatMap((field) => {
      const readAhead = field.extensions['readAhead'] as ReadAhead | undefined;
      return readAhead ? [[field, readAhead] as [GraphQLField<unknown, unknown>, ReadAhead]] : [];
    });
    declared.set(type, fields);
  }
  return fields;
}

/**
 * The read-aheads of the fields the field being resolved selects of its own type, or of
 * the type at `path` below it (`'edges', 'node'` for a connection's rows). A field
 * selected twice (aliases) with different arguments, or with arguments its read-ahead
 * refuses, is left to its resolver, which reads or refuses it where it is.
 */
export function readAheadsSelected(
  info: GraphQLResolveInfo,
  ctx: Context,
  ...path: string[]
): ReadAheadChoice[] {
  let type = getNamedType(info.returnType);
  for (const name of path) {
    if (!isObjectType(type)) return [];
    const field = type.getFields()[name];
    if (!field) return [];
    type = getNamedType(field.type);
  }
  if (!isObjectType(type)) return [];
  const chosen: ReadAheadChoice[] = [];
  for (const [field, readAhead] of readAheadFields(type)) {
    const nodes = selected(info, ...path, field.name);
    if (nodes.length === 0) continue;
    try {
      const each = nodes.map((node) =>
        readAhead.values(getArgumentValues(field, node, info.variableValues), ctx),
      );
      const first = JSON.stringify(each[0]);
      if (each.every((values) => JSON.stringify(values) === first)) {
        const chosenOne = readAhead.choose?.(info) ?? readAhead;
        chosen.push({ readAhead: chosenOne, values: each[0] as Record<string, unknown> });
      }
    } catch {
      // The field's own resolver meets the same arguments and answers for them.
    }
  }
  return chosen;
}
