// Spans for SQL statements and for the resolvers that run them. postgres.js has no
// official instrumentation, so the gate (src/db/gate.ts), where every statement of a graph
// request runs, wraps each one here. A resolver gets a span only once it runs a statement:
// most resolvers read what a parent or a loader already holds, and a span for each would
// bury the few that reach the database.
import { isPromise } from 'node:util/types';
import {
  context,
  createContextKey,
  SpanKind,
  trace,
  type Context,
  type Span,
} from '@opentelemetry/api';
import {
  defaultFieldResolver,
  isObjectType,
  type GraphQLFieldResolver,
  type GraphQLSchema,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { tracerProvider, tracingOn, withSpan } from './tracing.js';

/** A resolver running, whose span is made when its first statement starts. */
interface RunningResolver {
  name: string;
  startTime: number;
  parent: Context;
  span?: Span;
  ended: boolean;
}

const RESOLVER = createContextKey('svc.resolver');

/** Characters of a statement a span keeps (statements carry no values: they are bound). */
const STATEMENT_TEXT_MAX = 2000;

/** `select`, `insert`, `with`…: the statement's first word, upper case. */
function statementName(text: string): string {
  const word = /^\s*([A-Za-z]+)/.exec(text)?.[1];
  return word ? word.toUpperCase() : 'SQL';
}

/** The span of the resolver running `active`, made now if this is its first statement. */
function resolverSpan(active: Context): Span | undefined {
  const running = active.getValue(RESOLVER) as RunningResolver | undefined;
  if (!running || running.ended) return undefined;
  running.span ??= trace
    .getTracer('svc')
    .startSpan(
      running.name,
      { startTime: running.startTime, attributes: { 'graphql.field.path': running.name } },
      running.parent,
    );
  return running.span;
}

/** Runs one statement (its turn in the gate included) inside a span, when tracing is on. */
export function traceStatement<T>(text: string, run: () => Promise<T>): Promise<T> {
  if (!tracingOn()) return run();
  const active = context.active();
  const resolver = resolverSpan(active);
  return withSpan(
    statementName(text),
    {
      kind: SpanKind.CLIENT,
      parent: resolver ? trace.setSpan(active, resolver) : active,
      attributes: {
        'db.system.name': 'postgresql',
        'db.query.text': text.slice(0, STATEMENT_TEXT_MAX),
      },
    },
    () => run(),
  );
}

function traced(name: string, resolve: GraphQLFieldResolver<unknown, unknown>) {
  return function (this: unknown, ...args: Parameters<GraphQLFieldResolver<unknown, unknown>>) {
    if (!tracingOn()) return resolve.apply(this, args);
    const parent = context.active();
    const running: RunningResolver = { name, startTime: Date.now(), parent, ended: false };
    const end = () => {
      running.ended = true;
      running.span?.end();
    };
    let result: unknown;
    try {
      result = context.with(parent.setValue(RESOLVER, running), () => resolve.apply(this, args));
    } catch (error) {
      end();
      throw error;
    }
    if (!isPromise(result)) {
      end();
      return result;
    }
    return result.finally(end);
  };
}

const wrapped = new WeakSet<GraphQLSchema>();

/**
 * Wraps every field resolver of the schema (not the default one, which reads a property)
 * so a statement it runs knows whose it is. Installed only while tracing is on.
 */
export function useResolverSpans(): Plugin {
  return {
    onSchemaChange({ schema }) {
      if (wrapped.has(schema) || !tracerProvider()) return;
      wrapped.add(schema);
      for (const type of Object.values(schema.getTypeMap())) {
        if (!isObjectType(type) || type.name.startsWith('__')) continue;
        for (const field of Object.values(type.getFields())) {
          if (!field.resolve || field.resolve === defaultFieldResolver) continue;
          field.resolve = traced(`${type.name}.${field.name}`, field.resolve);
        }
      }
    },
  };
}
