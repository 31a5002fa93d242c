import {
  Kind,
  SchemaMetaFieldDef,
  TypeMetaFieldDef,
  TypeNameMetaFieldDef,
  getNamedType,
  getNullableType,
  isAbstractType,
  isCompositeType,
  isListType,
  isObjectType,
  valueFromASTUntyped,
  type DocumentNode,
  type ExecutionResult,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLObjectType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionNode,
  type SelectionSetNode,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { refuse } from '../errors.js';

/**
 * The cost of an operation, by SPEC 8.1: "a page costs rows asked times cost of one row;
 * reading one field of each row costs 2 a row".
 *
 * - A leaf field (scalar, enum, `__typename`) costs 1.
 * - A non-list object field costs what its selection costs; nothing of its own.
 * - A list field costs `rows × (1 + cost of one row's selection)`; a row of leaves has an
 *   empty selection, so a list of leaves costs `rows`.
 * - A field declaring a `first` or `limit` argument asks for that many rows (literal,
 *   variable, the argument's default, else `defaultPageSize`; clamped at 0). On a list
 *   field that is its `rows`; on a non-list field (a connection or a page) the size
 *   passes down through non-list fields to the first list fields beneath (`edges`,
 *   `items`), which consume it. Lists inside those rows do not inherit it.
 * - Any other list asks for `extensions.complexity.rows` of its field, else 1.
 * - A field adds what its own statements cost, `extensions.complexity.cost` (a number, or
 *   a function of its arguments and its parent field's), to what it selects; on a list it
 *   is paid once, inside its rows once a row (docs/complexity.md).
 * - Every item of a list argument adds 1, lists nested in input objects included.
 * - Fragments are expanded, `@skip`/`@include` honoured, and a selection on an abstract
 *   type costs the most any of its possible types would.
 *
 * Returns 0 when the document holds no operation to run (execution reports that).
 */
export function operationComplexity(args: {
  schema: GraphQLSchema;
  document: DocumentNode;
  operationName?: string | null;
  variables?: Record<string, unknown> | null;
  defaultPageSize: number;
  rootCosts?: RootCosts;
}): number {
  const operation = findOperation(args.document, args.operationName);
  if (!operation) return 0;
  const root = args.schema.getRootType(operation.operation);
  if (!root) return 0;
  const ctx: Walk = {
    schema: args.schema,
    fragments: fragmentsOf(args.document),
    variables: effectiveVariables(operation, args.variables),
    defaultPageSize: args.defaultPageSize,
    root,
    rootCost: args.rootCosts?.[operation.operation] ?? 0,
  };
  return selectionCost(ctx, root, [{ selectionSet: operation.selectionSet, ancestors: NONE }], {
    parentArgs: NO_ARGS,
  });
}

/** What a root field of each kind costs when it declares nothing. */
export type RootCosts = Readonly<Record<'query' | 'mutation' | 'subscription', number>>;

/** A field's arguments as the operation gives them (variables and defaults applied). */
export type FieldArguments = Readonly<Record<string, unknown>>;

/** What a field declares in `extensions.complexity` (see {@link costs}). */
export interface FieldComplexity {
  /** Rows an unpaged list field answers, as an estimate. @default 1 */
  rows?: number;
  /**
   * What the field's own statements cost beyond its selection: a number, or a function
   * of its arguments and its parent field's (a page's `total` counts what its page
   * filtered by). @default 0
   */
  cost?: number | ((args: FieldArguments, parentArgs: FieldArguments) => number);
}

/** `extensions` declaring a field's cost: `t.field({ extensions: costs({ cost: 5 }) })`. */
export function costs(complexity: FieldComplexity): { complexity: FieldComplexity } {
  return { complexity };
}

/** Variables longer than this (as JSON) are walked every time rather than remembered. */
const CACHED_KEY_MAX = 1024;
/** Distinct operation names and variables remembered per document. */
const CACHED_PER_DOCUMENT = 64;

/** Options of {@link useComplexityLimit}. */
export interface ComplexityLimitOptions {
  /**
   * Highest cost an operation may have; a costlier one is refused before it runs.
   * @default 2500 (SPEC 8.1)
   */
  limit?: number;
  /** Rows a paged field returns when the operation names no `first`/`limit` (SPEC 8.1: 50). */
  defaultPageSize: number;
  /** Seconds announced in the refusal's `Retry-After` header. */
  retryAfterSeconds: number;
  /** What a root field declaring no `cost` pays, by operation kind. @default nothing */
  rootCosts?: RootCosts;
}

/**
 * Refuses an operation whose {@link operationComplexity} exceeds `limit`, after
 * validation and before any resolver runs, subscriptions included. The refusal is the
 * `complexity_limit_exceeded` AppError (code COMPLEXITY_LIMIT_EXCEEDED, meta
 * `{ complexity, limit }`) answered with HTTP 429 and `Retry-After` (SPEC 7.2), and
 * `data: null` (SPEC 7.1).
 */
export function useComplexityLimit(
  options: ComplexityLimitOptions,
  check: ComplexityCheck = complexityCheck(options),
): Plugin {
  return {
    onExecute({ args, setResultAndStopExecution }) {
      const refusal = check(args);
      if (refusal) setResultAndStopExecution(refusal);
    },
    onSubscribe({ args, setResultAndStopExecution }) {
      const refusal = check(args);
      if (refusal) setResultAndStopExecution(refusal);
    },
  };
}

/** What {@link useComplexityLimit} checks: the refusal of a too costly operation, or undefined. */
export type ComplexityCheck = (args: CheckedArgs) => ExecutionResult | undefined;

/**
 * The check of {@link useComplexityLimit}, with its cache of costs: shared with the graph's
 * direct path (src/graph/direct.ts), which runs it before a cached operation.
 */
export function complexityCheck(options: ComplexityLimitOptions): ComplexityCheck {
  const limit = options.limit ?? 2500;
  // Yoga hands the same parsed document to every request of the same query text, so a
  // document's cost is walked once per operation name and variables (small ones only).
  const known = new WeakMap<DocumentNode, Map<string, number>>();
  const complexityOf = (args: CheckedArgs): number => {
    const walk = () =>
      operationComplexity({
        schema: args.schema,
        document: args.document,
        operationName: args.operationName,
        variables: args.variableValues,
        defaultPageSize: options.defaultPageSize,
        ...(options.rootCosts ? { rootCosts: options.rootCosts } : {}),
      });
    const values = plainJson(args.variableValues ?? {});
    if (values === undefined) return walk();
    const key = `${args.operationName ?? ''}\u0000${values}`;
    if (key.length > CACHED_KEY_MAX) return walk();
    let costs = known.get(args.document);
    if (!costs) known.set(args.document, (costs = new Map()));
    let complexity = costs.get(key);
    if (complexity === undefined) {
      if (costs.size >= CACHED_PER_DOCUMENT) costs.clear();
      costs.set(key, (complexity = walk()));
    }
    return complexity;
  };
  return (args) => {
    const complexity = complexityOf(args);
    if (complexity <= limit) return undefined;
    const error = refuse(
      'complexity_limit_exceeded',
      { complexity, limit },
      { http: { status: 429, headers: { 'Retry-After': String(options.retryAfterSeconds) } } },
    );
    return { data: null, errors: [error] };
  };
}

/**
 * `values` as JSON when they hold only lists, plain objects, dates and scalars, else
 * undefined: an upload (a file among the variables) is never part of a cache key, and
 * stringifying it would turn its bytes into a list of numbers first.
 */
function plainJson(values: object): string | undefined {
  return isPlainTree(values, 0) ? JSON.stringify(values) : undefined;
}

function isPlainTree(value: unknown, depth: number): boolean {
  if (typeof value !== 'object' || value === null || value instanceof Date) return true;
  if (depth > 16) return false;
  if (!Array.isArray(value) && !isPlainObject(value)) return false;
  for (const item of Object.values(value)) if (!isPlainTree(item, depth + 1)) return false;
  return true;
}

interface CheckedArgs {
  schema: GraphQLSchema;
  document: DocumentNode;
  operationName?: string | null;
  variableValues?: Record<string, unknown> | null;
}

interface Walk {
  schema: GraphQLSchema;
  fragments: ReadonlyMap<string, FragmentDefinitionNode>;
  variables: Record<string, unknown>;
  defaultPageSize: number;
  /** The operation's root type, whose fields fall back on `rootCost`. */
  root: GraphQLObjectType;
  rootCost: number;
}

/** A selection set to expand, with the fragments already expanded on the way to it. */
interface Pending {
  selectionSet: SelectionSetNode;
  ancestors: ReadonlySet<string>;
}

/** The nodes selected under one response key, each with the fragments it came through. */
type Collected = Map<string, Array<{ node: FieldNode; ancestors: ReadonlySet<string> }>>;

const NONE: ReadonlySet<string> = new Set();
const NO_ARGS: FieldArguments = Object.freeze({});

/** What a field hands down to the fields it selects. */
interface Inherited {
  /** The page size of a connection or page, for the first lists beneath. */
  carriedRows?: number;
  /** The arguments of the field selecting these. */
  parentArgs: FieldArguments;
}
const PAGE_ARGUMENTS = ['first', 'limit'];

function findOperation(
  document: DocumentNode,
  operationName: string | null | undefined,
): OperationDefinitionNode | undefined {
  const operations = document.definitions.filter(
    (d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION,
  );
  if (operationName) return operations.find((o) => o.name?.value === operationName);
  return operations.length === 1 ? operations[0] : undefined;
}

function fragmentsOf(document: DocumentNode): Map<string, FragmentDefinitionNode> {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions) {
    if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  }
  return fragments;
}

/** Supplied variables, falling back to the operation's declared defaults. */
function effectiveVariables(
  operation: OperationDefinitionNode,
  supplied: Record<string, unknown> | null | undefined,
): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const definition of operation.variableDefinitions ?? []) {
    const name = definition.variable.name.value;
    const given = supplied && Object.hasOwn(supplied, name) ? supplied[name] : undefined;
    if (given !== undefined) values[name] = given;
    else if (definition.defaultValue) values[name] = valueFromASTUntyped(definition.defaultValue);
  }
  return values;
}

/** Cost of the selection sets `pending` on `type`, the priciest possible type if abstract. */
function selectionCost(
  ctx: Walk,
  type: GraphQLCompositeType,
  pending: Pending[],
  inherited: Inherited,
): number {
  const runtimeTypes: readonly GraphQLCompositeType[] = isAbstractType(type)
    ? ctx.schema.getPossibleTypes(type)
    : [type];
  let most = 0;
  for (const runtimeType of runtimeTypes.length > 0 ? runtimeTypes : [type]) {
    const collected: Collected = new Map();
    const visited = new Set<string>();
    for (const p of pending)
      collect(ctx, runtimeType, p.selectionSet, p.ancestors, visited, collected);
    let cost = 0;
    for (const nodes of collected.values()) cost += fieldCost(ctx, runtimeType, nodes, inherited);
    most = Math.max(most, cost);
  }
  return most;
}

/**
 * Gathers the fields `selectionSet` selects on `type` by response key, as execution
 * does. `visited` stops a fragment spread twice at one level; `ancestors` stops a
 * fragment that (invalidly) spreads itself further down.
 */
function collect(
  ctx: Walk,
  type: GraphQLCompositeType,
  selectionSet: SelectionSetNode,
  ancestors: ReadonlySet<string>,
  visited: Set<string>,
  into: Collected,
): void {
  for (const selection of selectionSet.selections) {
    if (!included(ctx, selection)) continue;
    if (selection.kind === Kind.FIELD) {
      const key = selection.alias?.value ?? selection.name.value;
      const nodes = into.get(key) ?? [];
      nodes.push({ node: selection, ancestors });
      into.set(key, nodes);
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      if (!applies(ctx, selection.typeCondition?.name.value, type)) continue;
      collect(ctx, type, selection.selectionSet, ancestors, visited, into);
    } else {
      const name = selection.name.value;
      const fragment = ctx.fragments.get(name);
      if (!fragment || visited.has(name) || ancestors.has(name)) continue;
      visited.add(name);
      if (!applies(ctx, fragment.typeCondition.name.value, type)) continue;
      collect(ctx, type, fragment.selectionSet, new Set([...ancestors, name]), visited, into);
    }
  }
}

function included(ctx: Walk, selection: SelectionNode): boolean {
  for (const directive of selection.directives ?? []) {
    const name = directive.name.value;
    if (name !== 'skip' && name !== 'include') continue;
    const condition = directive.arguments?.find((a) => a.name.value === 'if');
    const value = condition ? valueFromASTUntyped(condition.value, ctx.variables) : undefined;
    if (name === 'skip' && value === true) return false;
    if (name === 'include' && value === false) return false;
  }
  return true;
}

function applies(ctx: Walk, condition: string | undefined, type: GraphQLCompositeType): boolean {
  if (!condition || condition === type.name) return true;
  const conditionType = ctx.schema.getType(condition);
  return (
    conditionType !== undefined &&
    isAbstractType(conditionType) &&
    isObjectType(type) &&
    ctx.schema.isSubType(conditionType, type)
  );
}

function fieldCost(
  ctx: Walk,
  parent: GraphQLCompositeType,
  nodes: Array<{ node: FieldNode; ancestors: ReadonlySet<string> }>,
  inherited: Inherited,
): number {
  const first = nodes[0];
  if (!first) return 0;
  const field = fieldDefinition(ctx.schema, parent, first.node.name.value);
  if (!field) return 0;
  const named: GraphQLNamedType = getNamedType(field.type);
  const args = field.args.length > 0 ? argumentsOf(ctx, field, first.node) : NO_ARGS;
  const fallback = parent === ctx.root ? ctx.rootCost : 0;
  const own = ownCost(field, args, inherited.parentArgs, fallback) + listItems(args, 0);
  const pageSize = pageSizeOf(field, args, ctx.defaultPageSize);
  const pending = nodes.flatMap(({ node, ancestors }) =>
    node.selectionSet ? [{ selectionSet: node.selectionSet, ancestors }] : [],
  );
  if (isListType(getNullableType(field.type))) {
    const rows = pageSize ?? inherited.carriedRows ?? estimatedRows(field);
    const row = isCompositeType(named)
      ? selectionCost(ctx, named, pending, { parentArgs: args })
      : 0;
    return own + rows * (1 + row);
  }
  if (!isCompositeType(named)) return own + 1;
  const carriedRows = pageSize ?? inherited.carriedRows;
  return own + selectionCost(ctx, named, pending, { carriedRows, parentArgs: args });
}

/** The field's arguments: literals, variables, else the argument's default. */
function argumentsOf(
  ctx: Walk,
  field: GraphQLField<unknown, unknown>,
  node: FieldNode,
): FieldArguments {
  const args: Record<string, unknown> = {};
  for (const argument of field.args) {
    const given = node.arguments?.find((a) => a.name.value === argument.name);
    let value = given ? valueFromASTUntyped(given.value, ctx.variables) : undefined;
    // An absent argument or unsupplied variable takes the argument's default; null does not.
    if (value === undefined) value = argument.defaultValue;
    if (value !== undefined) args[argument.name] = value;
  }
  return args;
}

function ownCost(
  field: GraphQLField<unknown, unknown>,
  args: FieldArguments,
  parentArgs: FieldArguments,
  fallback: number,
): number {
  const cost = complexityOf(field)?.cost;
  if (cost === undefined) return field.name.startsWith('__') ? 0 : fallback;
  return Math.max(0, typeof cost === 'function' ? cost(args, parentArgs) : cost);
}

/**
 * Items of every list among `value`'s arguments, at any depth (input bounds cap it). Only
 * lists and input objects are walked: an upload's file is a leaf, and walking its bytes
 * as values made a 4 MB upload allocate some 200 MB.
 */
function listItems(value: unknown, depth: number): number {
  if (typeof value !== 'object' || value === null || depth > 16) return 0;
  const list = Array.isArray(value);
  if (!list && !isPlainObject(value)) return 0;
  let items = list ? value.length : 0;
  for (const item of Object.values(value)) items += listItems(item, depth + 1);
  return items;
}

function isPlainObject(value: object): boolean {
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

function fieldDefinition(
  schema: GraphQLSchema,
  parent: GraphQLCompositeType,
  name: string,
): GraphQLField<unknown, unknown> | undefined {
  if (name === TypeNameMetaFieldDef.name) return TypeNameMetaFieldDef;
  if (parent === schema.getQueryType()) {
    if (name === SchemaMetaFieldDef.name) return SchemaMetaFieldDef;
    if (name === TypeMetaFieldDef.name) return TypeMetaFieldDef;
  }
  return 'getFields' in parent ? (parent as GraphQLObjectType).getFields()[name] : undefined;
}

/** Rows a `first`/`limit` argument asks for, or undefined when the field takes neither. */
function pageSizeOf(
  field: GraphQLField<unknown, unknown>,
  args: FieldArguments,
  defaultPageSize: number,
): number | undefined {
  const argument = field.args.find((a) => PAGE_ARGUMENTS.includes(a.name));
  if (!argument) return undefined;
  return rowsFrom(args[argument.name]) ?? defaultPageSize;
}

function complexityOf(field: GraphQLField<unknown, unknown>): FieldComplexity | undefined {
  return (field.extensions as { complexity?: FieldComplexity }).complexity;
}

function estimatedRows(field: GraphQLField<unknown, unknown>): number {
  return rowsFrom(complexityOf(field)?.rows) ?? 1;
}

/** A usable row count; out-of-range sizes are clamped here and refused by validation. */
function rowsFrom(value: unknown): number | undefined {
  if (typeof value !== 'number' || Number.isNaN(value)) return undefined;
  return Math.max(0, Math.floor(value));
}
