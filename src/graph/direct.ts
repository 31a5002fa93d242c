import {
  getOperationAST,
  GraphQLObjectType,
  GraphQLSchema,
  Kind,
  type DocumentNode,
  type ExecutionResult,
  type FragmentDefinitionNode,
  type GraphQLError,
  type GraphQLFieldConfig,
  type GraphQLFieldResolver,
  type SelectionSetNode,
} from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import { isPromise, type Plugin } from 'graphql-yoga';
import { checkAccess, type AccessRule } from '../auth/access.js';
import type { Context } from '../context.js';
import { isDatabaseUnavailable } from '../db/client.js';
import { isCancellation } from '../db/gate.js';
import type { ComplexityCheck } from './complexity.js';
import { deadlineAnswer, withinDeadline, type OperationDeadlineOptions } from './deadline.js';
import type { InputLimitsCheck } from './input-limits.js';
import type { JsonOperation } from './json-operation.js';
import type { OperationRecorder, Running } from './observe.js';

/**
 * The graph's direct path (issue 29): a query a signed-in caller sends again, run without
 * Yoga's and envelop's per-request pipeline.
 *
 * Yoga serves a query text the first time, with every plugin (server.ts). When its answer
 * has no error, the caller is signed in and the operation is a query graphql-jit compiled,
 * the text is kept here with its parsed document and compiled query. Everything Yoga's
 * pipeline decided of that text holds for any signed-in caller who sends it again: it
 * parses, it is within the document limits, it validates (only an anonymous caller's
 * validation differs: suggestions and introspection are held from them). What depends on
 * the request is decided again here, as the plugins decide it: the variables against the
 * input limits, the operation's cost against the complexity limit, the deadline, and the
 * metrics of the operation observer.
 *
 * Access is decided once per operation: the root fields' rules (src/auth/access.ts) are
 * checked before the run, and the operation is compiled against the schema with those
 * fields' own resolvers, without scope-auth's per-field wrapping (which reads the same
 * rules, through a per-request cache). Only root fields carry rules (the Query type's
 * `authenticated` and a field's `access`); a root field whose rules take another shape
 * keeps its wrapped resolver. A caller a rule refuses goes back to Yoga, which refuses it.
 *
 * Any answer but a clean one goes back to Yoga, which runs the operation again and answers
 * it with its shapes: a refusal of the input or complexity limits before anything runs,
 * and an answer with errors after this run (queries only read, so the second run changes
 * nothing, as compiled-queries.ts already does for graphql-js). Only the deadline is
 * answered here, with the refusal the deadline plugin gives.
 */
export interface DirectPath {
  /** Records which document Yoga ran for a context (a plugin of the Yoga server). */
  plugin: Plugin<Context>;
  /**
   * The result of `operation` run directly: a clean result, a refusal already shaped (the
   * deadline's, or the database's unavailability), or null when Yoga must answer (a text
   * not kept, a refusal, another error).
   */
  run(operation: JsonOperation, context: Context): Promise<DirectResult | null>;
  /** After Yoga answered `operation` without errors for `context`: keeps it when it may. */
  learn(operation: JsonOperation, context: Context): void;
}

export type DirectResult = { result: ExecutionResult } | { refused: ExecutionResult };

export interface DirectPathOptions {
  schema: GraphQLSchema;
  inputLimits: InputLimitsCheck;
  complexity: ComplexityCheck;
  recorder: OperationRecorder;
  deadline: OperationDeadlineOptions;
  /** Yoga's `maskError` (error-shape.ts), for the refusals answered here. */
  maskError: (error: unknown) => Error;
}

/** A query text kept, with what running it needs. */
interface Kept {
  document: DocumentNode;
  operationName: string | null | undefined;
  query: CompiledQuery;
  /** The operation's metric label. */
  label: string;
  /** The access rules of its root fields, checked before each run. */
  rules: readonly AccessRule[];
}

/** What a root field answered without scope-auth demands of its caller. */
type RootAccess = { rule: AccessRule | null };

interface PothosFieldExtensions {
  pothosResolveWrapped?: boolean;
  pothosOptions?: { authScopes?: unknown; grantScopes?: unknown; skipTypeScopes?: boolean };
  pothosConfig?: { resolve?: GraphQLFieldResolver<unknown, unknown> };
  pothosArgMappers?: unknown[];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The schema with the root Query fields' own resolvers, where scope-auth's rules for them
 * are ones this path checks itself: the type's `{ authenticated: true }` (every caller
 * here is signed in) and a field's `{ access: rule }`. Any other shape keeps its field
 * wrapped; a schema this cannot rebuild is used as it is.
 */
function unwrappedRoots(schema: GraphQLSchema): {
  schema: GraphQLSchema;
  access: ReadonlyMap<string, RootAccess>;
} {
  const access = new Map<string, RootAccess>();
  const query = schema.getQueryType();
  const typeScopes = (query?.extensions as PothosFieldExtensions | undefined)?.pothosOptions
    ?.authScopes;
  const authenticatedOnly =
    isRecord(typeScopes) &&
    Object.keys(typeScopes).length === 1 &&
    typeScopes['authenticated'] === true;
  if (!query || !authenticatedOnly) return { schema, access };
  const config = query.toConfig();
  const fields: Record<string, GraphQLFieldConfig<unknown, unknown>> = {};
  for (const [name, field] of Object.entries(config.fields)) {
    fields[name] = field;
    const extensions = field.extensions as PothosFieldExtensions;
    if (!extensions.pothosResolveWrapped) continue;
    const options = extensions.pothosOptions ?? {};
    const scopes = options.authScopes;
    const own = extensions.pothosConfig?.resolve;
    const plain =
      scopes === undefined ||
      (isRecord(scopes) && Object.keys(scopes).length === 1 && isRecord(scopes['access']));
    if (
      !plain ||
      options.grantScopes !== undefined ||
      typeof own !== 'function' ||
      (extensions.pothosArgMappers?.length ?? 0) > 0
    ) {
      continue;
    }
    fields[name] = { ...field, resolve: own };
    access.set(name, { rule: isRecord(scopes) ? (scopes['access'] as AccessRule) : null });
  }
  try {
    const root = new GraphQLObjectType({ ...config, fields });
    const whole = schema.toConfig();
    const rebuilt = new GraphQLSchema({
      ...whole,
      query: root,
      types: whole.types.map((type) => (type === query ? root : type)),
    });
    return { schema: rebuilt, access };
  } catch {
    return { schema, access: new Map() };
  }
}

/**
 * The rules of the root fields an operation selects (through fragments, whatever their
 * directives: a field skipped is checked all the same, and a refusal goes back to Yoga).
 * A root field that keeps scope-auth's wrapping has none here: it checks itself.
 */
function rootRules(
  document: DocumentNode,
  selections: SelectionSetNode,
  access: ReadonlyMap<string, RootAccess>,
): AccessRule[] {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) {
      fragments.set(definition.name.value, definition);
    }
  }
  const rules: AccessRule[] = [];
  const seen = new Set<string>();
  function walk(set: SelectionSetNode): void {
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) {
        const rule = access.get(selection.name.value)?.rule;
        if (rule && !rules.includes(rule)) rules.push(rule);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        walk(selection.selectionSet);
      } else if (!seen.has(selection.name.value)) {
        seen.add(selection.name.value);
        const fragment = fragments.get(selection.name.value);
        if (fragment) walk(fragment.selectionSet);
      }
    }
  }
  walk(selections);
  return rules;
}

/** Texts kept (each with its document): Yoga's document cache holds as many. */
const KEPT_MAX = 1024;

const EXPIRED = Symbol('deadline passed');

function keyOf(operation: JsonOperation): string {
  return operation.operationName
    ? `${operation.operationName}\u0000${operation.query}`
    : operation.query;
}

export function createDirectPath(options: DirectPathOptions): DirectPath {
  const { schema, recorder } = options;
  const direct = unwrappedRoots(schema);
  const kept = new Map<string, Kept>();
  const ran = new WeakMap<object, { document: DocumentNode; operationName?: string | null }>();
  const expired = deadlineAnswer(options.deadline);
  const { timeoutMs } = options.deadline;

  return {
    plugin: {
      onExecute({ args }) {
        ran.set(args.contextValue, { document: args.document, operationName: args.operationName });
      },
    },

    learn(operation, context) {
      const what = ran.get(context);
      if (!what || !context.actor) return;
      const definition = getOperationAST(what.document, what.operationName);
      if (definition?.operation !== 'query') return;
      const query = compileQuery(direct.schema, what.document, what.operationName ?? undefined);
      if (!isCompiledQuery(query)) return;
      if (kept.size >= KEPT_MAX) kept.clear();
      kept.set(keyOf(operation), {
        document: what.document,
        operationName: what.operationName,
        query,
        label: recorder.label(definition.name?.value ?? 'anonymous'),
        rules: rootRules(what.document, definition.selectionSet, direct.access),
      });
    },

    async run(operation, context) {
      const entry = kept.get(keyOf(operation));
      if (!entry) return null;
      const args = {
        schema,
        document: entry.document,
        operationName: entry.operationName,
        variableValues: operation.variables,
      };
      if (options.inputLimits(args) || options.complexity(args)) return null;
      // Every caller here is signed in (the Query type's `authenticated`); the root
      // fields' own rules are checked once, for the operation.
      try {
        for (const rule of entry.rules) checkAccess(context.actor, rule);
      } catch {
        return null;
      }
      const running: Running = {
        startedAt: performance.now(),
        operation: entry.label,
        type: 'query',
      };
      let result: ExecutionResult | typeof EXPIRED;
      try {
        const made = entry.query.query(undefined, context, operation.variables ?? {}) as
          ExecutionResult | Promise<ExecutionResult>;
        result = isPromise(made)
          ? await withinDeadline(made, context, timeoutMs, () => EXPIRED)
          : made;
      } catch {
        return null;
      }
      if (result === EXPIRED) {
        const answer = expired();
        recorder.finished(running, answer.errors as unknown as GraphQLError[], context);
        return { refused: answer };
      }
      if (result.errors?.length) {
        // PostgreSQL unavailable (down, failing over, a replica gone): Yoga's second run
        // would meet it again, past the deadline. Answered as Yoga answers it (UNAVAILABLE).
        const unavailable = result.errors.every(
          (error) => isDatabaseUnavailable(error.originalError) && !isCancellation(error),
        );
        if (!unavailable) return null;
        recorder.finished(running, result.errors as GraphQLError[], context);
        return {
          refused: {
            data: result.data ?? null,
            errors: result.errors.map(options.maskError) as GraphQLError[],
          },
        };
      }
      recorder.finished(running, undefined, context);
      return { result };
    },
  };
}
