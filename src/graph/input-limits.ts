import {
  Kind,
  getNamedType,
  getNullableType,
  isInputObjectType,
  isListType,
  isScalarType,
  isSpecifiedScalarType,
  valueFromASTUntyped,
  type ASTNode,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputField,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { refuse, refusePlugin, type AppError } from '../errors.js';
import { DEFAULT_LIST_MAX, DEFAULT_TEXT_MAX, DEPTH_MAX, textProblem } from '../limits.js';

/** What an argument or input field declares in `extensions.limits` (docs/limits.md). */
export interface InputLimits {
  /** Longest text, in characters. @default DEFAULT_TEXT_MAX (4096) */
  maxLength?: number;
  /** Most items of a list. @default DEFAULT_LIST_MAX (100) */
  maxItems?: number;
  /**
   * The reason a text past `maxLength` is refused with, where one is declared for it
   * (`name_too_long`, a plugin's own); its meta is `{ max }`. @default 'text_too_long'
   */
  tooLong?: string;
  /**
   * Largest file an `Upload` argument takes, in bytes: a multipart request whose declared
   * length could hold no file of any upload field is refused before its body is read.
   */
  maxBytes?: number;
  /**
   * The reason a request too large for its files is refused with (`file_too_large`, a
   * plugin's own); its meta is `{ maxBytes }`. @default 'body_too_large'
   */
  tooLarge?: string;
}

/** `extensions` declaring limits: `t.arg.string({ extensions: limited({ maxLength: 200 }) })`. */
export function limited(limits: InputLimits): { limits: InputLimits } {
  return { limits };
}

/** Where an input sits, for the refusal: its field's response path and its own name. */
interface Site {
  path: readonly string[];
  node: ASTNode;
  /** `input.identities[2].identifier`, as the message names it. */
  name: string;
}

type Refusal = () => AppError;

/** A variable used at a position whose type and limits are known from the document. */
interface Usage {
  variable: string;
  type: GraphQLInputType;
  limits: InputLimits | undefined;
  site: Site;
}

interface Analysis {
  /** The first literal the document refuses, whatever variables come with it. */
  refusal: Refusal | null;
  usages: Usage[];
  defaults: Record<string, unknown>;
}

/**
 * Refuses text and lists an operation's arguments carry before anything runs: text with a
 * NUL or an unpaired surrogate (`text_invalid`), text past its argument's `maxLength`
 * (`text_too_long`, meta `max`), lists past `maxItems` (`list_too_long`), and input nested
 * past DEPTH_MAX (`query_too_deep`). Every argument and input field is bounded, declared or
 * not, so a plugin's arguments are held as the core's are. The refusal names the argument
 * in its message, the field in `path` and the value in `locations`, with `data: null`.
 */
export function useInputLimits(check: InputLimitsCheck = inputLimitsCheck()): Plugin {
  return {
    onExecute({ args, setResultAndStopExecution }) {
      const result = check(args);
      if (result) setResultAndStopExecution(result);
    },
    onSubscribe({ args, setResultAndStopExecution }) {
      const result = check(args);
      if (result) setResultAndStopExecution(result);
    },
  };
}

/** What {@link useInputLimits} checks: the refusal of an operation's arguments, or undefined. */
export type InputLimitsCheck = (args: {
  schema: GraphQLSchema;
  document: DocumentNode;
  operationName?: string | null;
  variableValues?: Record<string, unknown> | null;
}) => { data: null; errors: AppError[] } | undefined;

/**
 * The check of {@link useInputLimits}, each document analysed once: shared with the graph's
 * direct path (src/graph/direct.ts), which runs it before a cached operation.
 */
export function inputLimitsCheck(): InputLimitsCheck {
  const analyses = new WeakMap<DocumentNode, Map<string, Analysis>>();

  function analysisOf(schema: GraphQLSchema, document: DocumentNode, name?: string | null) {
    let byOperation = analyses.get(document);
    if (!byOperation) analyses.set(document, (byOperation = new Map()));
    let analysis = byOperation.get(name ?? '');
    if (!analysis) {
      analysis = analyse(schema, document, name);
      byOperation.set(name ?? '', analysis);
    }
    return analysis;
  }

  return (args) => {
    const analysis = analysisOf(args.schema, args.document, args.operationName);
    const refusal = analysis.refusal ?? variablesRefusal(analysis, args.variableValues ?? {});
    return refusal ? { data: null, errors: [refusal()] } : undefined;
  };
}

function variablesRefusal(analysis: Analysis, supplied: Record<string, unknown>): Refusal | null {
  for (const usage of analysis.usages) {
    const value = Object.hasOwn(supplied, usage.variable)
      ? supplied[usage.variable]
      : analysis.defaults[usage.variable];
    const refusal = valueRefusal(value, usage.type, usage.limits, usage.site, 0);
    if (refusal) return refusal;
  }
  return null;
}

/** Walks the operation once per document: literals are judged, variables' places noted. */
function analyse(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName?: string | null,
): Analysis {
  const analysis: Analysis = { refusal: null, usages: [], defaults: {} };
  const operations = document.definitions.filter(
    (d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION,
  );
  const operation = operationName
    ? operations.find((o) => o.name?.value === operationName)
    : operations.length === 1
      ? operations[0]
      : undefined;
  const root = operation && schema.getRootType(operation.operation);
  if (!operation || !root) return analysis; // execution reports it
  for (const definition of operation.variableDefinitions ?? []) {
    if (definition.defaultValue) {
      analysis.defaults[definition.variable.name.value] = valueFromASTUntyped(
        definition.defaultValue,
      );
    }
  }
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions) {
    if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  }
  const walk = { schema, fragments, seen: new Set<string>(), analysis };
  walkSelections(walk, root, operation.selectionSet, []);
  return analysis;
}

interface Walk {
  schema: GraphQLSchema;
  fragments: ReadonlyMap<string, FragmentDefinitionNode>;
  seen: Set<string>;
  analysis: Analysis;
}

function walkSelections(
  walk: Walk,
  type: GraphQLNamedType,
  selectionSet: SelectionSetNode,
  path: readonly string[],
): void {
  for (const selection of selectionSet.selections) {
    if (walk.analysis.refusal) return;
    if (selection.kind === Kind.FIELD) {
      walkField(walk, type, selection, path);
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      const condition = selection.typeCondition?.name.value;
      const inner = condition ? walk.schema.getType(condition) : type;
      if (inner) walkSelections(walk, inner, selection.selectionSet, path);
    } else if (!walk.seen.has(selection.name.value)) {
      walk.seen.add(selection.name.value);
      const fragment = walk.fragments.get(selection.name.value);
      const inner = fragment && walk.schema.getType(fragment.typeCondition.name.value);
      if (fragment && inner) walkSelections(walk, inner, fragment.selectionSet, path);
    }
  }
}

function walkField(
  walk: Walk,
  parent: GraphQLNamedType,
  node: FieldNode,
  parentPath: readonly string[],
): void {
  const field =
    'getFields' in parent
      ? (parent.getFields() as Record<string, GraphQLField<unknown, unknown>>)[node.name.value]
      : undefined;
  if (!field) return; // validation already refused it, or it is a meta field
  const path = [...parentPath, node.alias?.value ?? node.name.value];
  for (const argument of node.arguments ?? []) {
    const definition = field.args.find((a) => a.name === argument.name.value);
    if (!definition) continue;
    const site = { path, node: argument.value, name: argument.name.value };
    const refusal = literalRefusal(walk.analysis, argument.value, definition, site, 0);
    if (refusal) {
      walk.analysis.refusal = refusal;
      return;
    }
  }
  if (node.selectionSet) walkSelections(walk, getNamedType(field.type), node.selectionSet, path);
}

function limitsOf(definition: GraphQLArgument | GraphQLInputField): InputLimits | undefined {
  return (definition.extensions as { limits?: InputLimits }).limits;
}

/** Judges a literal; a variable inside it is noted with the type and limits of its place. */
function literalRefusal(
  analysis: Analysis,
  value: ValueNode,
  definition: { type: GraphQLInputType; extensions: unknown },
  site: Site,
  depth: number,
): Refusal | null {
  const limits = limitsOf(definition as GraphQLArgument);
  return literalAt(analysis, value, definition.type, limits, site, depth);
}

function literalAt(
  analysis: Analysis,
  value: ValueNode,
  type: GraphQLInputType,
  limits: InputLimits | undefined,
  site: Site,
  depth: number,
): Refusal | null {
  if (depth > DEPTH_MAX) return tooDeep(site);
  const nullable = getNullableType(type);
  switch (value.kind) {
    case Kind.VARIABLE:
      analysis.usages.push({ variable: value.name.value, type, limits, site });
      return null;
    case Kind.STRING:
      return isScalarType(nullable)
        ? textRefusal(value.value, limits, { ...site, node: value })
        : null;
    case Kind.LIST: {
      const itemType = isListType(nullable) ? nullable.ofType : nullable;
      const max = limits?.maxItems ?? DEFAULT_LIST_MAX;
      if (value.values.length > max) return listRefusal(max, site);
      for (const [i, item] of value.values.entries()) {
        const refusal = literalAt(
          analysis,
          item,
          itemType,
          limits,
          indexed(site, i, item),
          depth + 1,
        );
        if (refusal) return refusal;
      }
      return null;
    }
    case Kind.OBJECT: {
      for (const field of value.fields) {
        const inner = isInputObjectType(nullable) ? nullable.getFields()[field.name.value] : null;
        const where = named(site, field.name.value, field.value);
        const refusal = inner
          ? literalRefusal(analysis, field.value, inner, where, depth + 1)
          : literalAt(
              analysis,
              field.value,
              nullable as GraphQLInputType,
              // Inside a structured scalar (JSON) every string keeps the argument's limits.
              limits,
              where,
              depth + 1,
            );
        if (refusal) return refusal;
      }
      return null;
    }
    default:
      return null;
  }
}

/**
 * Judges a variable's value by the type of the place it is used: strings as text, lists
 * by count, input objects field by field with each field's limits. A custom scalar's
 * structured value (JSON) has every string inside it judged, to DEPTH_MAX.
 */
function valueRefusal(
  value: unknown,
  type: GraphQLInputType,
  limits: InputLimits | undefined,
  site: Site,
  depth: number,
): Refusal | null {
  if (value === null || value === undefined) return null;
  if (depth > DEPTH_MAX) return tooDeep(site);
  const nullable = getNullableType(type);
  if (isListType(nullable)) {
    // A single value stands for a list of one (GraphQL's input coercion).
    if (!Array.isArray(value)) return valueRefusal(value, nullable.ofType, limits, site, depth + 1);
    const max = limits?.maxItems ?? DEFAULT_LIST_MAX;
    if (value.length > max) return listRefusal(max, site);
    for (const [i, item] of value.entries()) {
      const refusal = valueRefusal(item, nullable.ofType, limits, indexed(site, i), depth + 1);
      if (refusal) return refusal;
    }
    return null;
  }
  if (isInputObjectType(nullable)) {
    if (typeof value !== 'object') return null; // coercion refuses it
    const fields = nullable.getFields();
    for (const [key, item] of Object.entries(value)) {
      const field = fields[key];
      if (!field) continue;
      const refusal = valueRefusal(item, field.type, limitsOf(field), named(site, key), depth + 1);
      if (refusal) return refusal;
    }
    return null;
  }
  if (!isScalarType(nullable)) return null; // an enum: coercion judges it
  if (typeof value === 'string') return textRefusal(value, limits, site);
  if (isSpecifiedScalarType(nullable) || typeof value !== 'object') return null;
  return anyRefusal(value, limits, site, depth + 1);
}

/** A value JSON could have made: an object whose prototype is Object's or none. */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** Every string inside a structured scalar value, to DEPTH_MAX, under the argument's limits. */
function anyRefusal(
  value: unknown,
  limits: InputLimits | undefined,
  site: Site,
  depth: number,
): Refusal | null {
  if (depth > DEPTH_MAX) return tooDeep(site);
  if (typeof value === 'string') return textRefusal(value, limits, site);
  // Only what JSON makes: an uploaded file's bytes are no text to walk (5 MiB of entries).
  if (!Array.isArray(value) && !isPlainObject(value)) return null;
  const entries = Array.isArray(value) ? value.entries() : Object.entries(value);
  for (const [key, item] of entries) {
    const where = typeof key === 'number' ? indexed(site, key) : named(site, key);
    // A key is text from outside too: a plugin may repeat it (`no field named …`) or store it.
    const keyRefusal = typeof key === 'string' ? textRefusal(key, limits, site) : null;
    if (keyRefusal) return keyRefusal;
    const refusal = anyRefusal(item, limits, where, depth + 1);
    if (refusal) return refusal;
  }
  return null;
}

function textRefusal(text: string, limits: InputLimits | undefined, site: Site): Refusal | null {
  // The one rule for outside text (src/limits.ts), which inbound platform data meets too.
  const problem = textProblem(text, limits?.maxLength ?? DEFAULT_TEXT_MAX);
  if (!problem) return null;
  if (problem.reason === 'text_invalid') {
    return () => refuse('text_invalid', {}, at(site, `${site.name} is not valid text`));
  }
  const message = `${site.name} may be at most ${problem.max} characters`;
  const reason = limits?.tooLong ?? 'text_too_long';
  return () => refusePlugin(reason, { max: problem.max }, at(site, message));
}

function listRefusal(max: number, site: Site): Refusal {
  return () =>
    refuse('list_too_long', { max }, at(site, `${site.name} may hold at most ${max} items`));
}

function tooDeep(site: Site): Refusal {
  return () => refuse('query_too_deep', { max: DEPTH_MAX }, at(site, undefined));
}

function at(site: Site, message: string | undefined) {
  return { path: site.path, nodes: [site.node], ...(message ? { message } : {}) };
}

function indexed(site: Site, index: number, node?: ASTNode): Site {
  return { ...site, name: `${site.name}[${index}]`, node: node ?? site.node };
}

function named(site: Site, key: string, node?: ASTNode): Site {
  return { ...site, name: `${site.name}.${key}`, node: node ?? site.node };
}

/** The most file bytes one upload field takes, and the reason a request past it gets. */
export interface UploadCapacity {
  maxBytes: number;
  tooLarge: string;
}

/**
 * The most file bytes any one field of `schema` takes in its `Upload` arguments (a list of
 * uploads counts `maxItems` files), with that field's `tooLarge` reason; null when no field
 * takes an upload, or one takes an upload of no declared size (only the multipart body cap
 * then bounds it).
 */
export function uploadCapacity(schema: GraphQLSchema): UploadCapacity | null {
  let widest: UploadCapacity | null = null;
  for (const root of [schema.getQueryType(), schema.getMutationType()]) {
    for (const field of Object.values(root?.getFields() ?? {})) {
      let bytes = 0;
      let tooLarge = 'body_too_large';
      for (const argument of field.args) {
        if (getNamedType(argument.type).name !== 'Upload') continue;
        const limits = limitsOf(argument);
        if (limits?.maxBytes === undefined) return null;
        const files = isListType(getNullableType(argument.type))
          ? (limits.maxItems ?? DEFAULT_LIST_MAX)
          : 1;
        bytes += files * limits.maxBytes;
        if (limits.tooLarge) tooLarge = limits.tooLarge;
      }
      if (bytes > 0 && (!widest || bytes > widest.maxBytes)) widest = { maxBytes: bytes, tooLarge };
    }
  }
  return widest;
}
