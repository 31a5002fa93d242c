import { Kind, valueFromASTUntyped, type ValueNode } from 'graphql';
import { AppError, refuse } from '../errors.js';
import { builder, type UploadedFile } from './builder.js';

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
// RFC 3339 with a mandatory offset; fractional seconds optional.
const dateTimePattern =
  /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;
const datePattern = /^(\d{4})-(\d{2})-(\d{2})$/;

function malformed(type: string, node?: ValueNode): never {
  throw refuse('value_malformed', { type }, node ? { nodes: [node] } : {});
}

/**
 * A scalar's parseLiteral. graphql-js reports a GraphQLError thrown there as it is, so the
 * refusal is given the literal's node: it then answers with the literal's place, as the
 * same value passed as a variable does.
 */
function literal<T>(type: string, parse: (value: unknown) => T) {
  return (node: ValueNode): T => {
    if (node.kind !== Kind.STRING) malformed(type, node);
    try {
      return parse(node.value);
    } catch (error) {
      if (error instanceof AppError && error.reason === 'value_malformed') malformed(type, node);
      throw error;
    }
  };
}

export function parseUuid(value: unknown): string {
  if (typeof value !== 'string' || !uuidPattern.test(value)) malformed('UUID');
  return value.toLowerCase();
}

export function parseDateTime(value: unknown): Date {
  if (typeof value !== 'string' || !dateTimePattern.test(value)) malformed('DateTime');
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) malformed('DateTime');
  return date;
}

/** A calendar day: the fields must name a real date (no 2025-02-30). */
export function parseDate(value: unknown): string {
  const match = typeof value === 'string' ? datePattern.exec(value) : null;
  if (!match) malformed('Date');
  const [, y, m, d] = match.map(Number) as [number, number, number, number];
  const date = new Date(Date.UTC(y, m - 1, d));
  if (date.getUTCFullYear() !== y || date.getUTCMonth() !== m - 1 || date.getUTCDate() !== d) {
    malformed('Date');
  }
  return value as string;
}

function serializeDateTime(value: unknown): string {
  const date = value instanceof Date ? value : new Date(String(value));
  if (Number.isNaN(date.getTime()))
    throw new TypeError('DateTime cannot represent an invalid date');
  return date.toISOString();
}

builder.scalarType('UUID', {
  description: 'RFC 4122 UUID in text form.',
  serialize: (value) => String(value),
  parseValue: parseUuid,
  parseLiteral: literal('UUID', parseUuid),
});

builder.scalarType('DateTime', {
  description: 'RFC 3339 date and time, answered in UTC.',
  serialize: serializeDateTime,
  parseValue: parseDateTime,
  parseLiteral: literal('DateTime', parseDateTime),
});

builder.scalarType('Date', {
  description: 'A calendar day with no time, ISO 8601 (YYYY-MM-DD).',
  serialize: (value: unknown) =>
    value instanceof Date ? value.toISOString().slice(0, 10) : String(value),
  parseValue: parseDate,
  parseLiteral: literal('Date', parseDate),
});

builder.scalarType('Upload', {
  description: 'A file part of a multipart request (GraphQL multipart request specification).',
  serialize: () => {
    throw new TypeError('Upload is an input-only scalar');
  },
  parseValue: (value) => {
    const file = value as Partial<UploadedFile> | null;
    if (typeof file?.arrayBuffer !== 'function' || typeof file.name !== 'string')
      malformed('Upload');
    return file as UploadedFile;
  },
  parseLiteral: literal('Upload', () => malformed('Upload')),
});

builder.scalarType('JSON', {
  description:
    'Any JSON value: an object, a list, a string, a number, a boolean or null. Fields that ' +
    'take one say what they accept (custom field values, docs/fields.md).',
  serialize: (value) => value,
  parseValue: (value) => value,
  parseLiteral: (node, variables) => valueFromASTUntyped(node, variables),
});
