import {
  getOperationAST,
  Kind,
  locatedError,
  type DocumentNode,
  type ExecutionArgs,
  type FieldNode,
  type FragmentDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Context } from '../context.js';
import { refuse } from '../errors.js';

/** The fields that read the schema itself; `__typename` names a type and stays open. */
const INTROSPECTION_FIELDS: ReadonlySet<string> = new Set(['__schema', '__type']);

export interface IntrospectionGateOptions {
  /**
   * Whether a caller that is not signed in may introspect: true with SVC_DEV_GRAPHIQL,
   * whose interactive page reads the schema before anyone signs in.
   * @default false
   */
  allowAnonymous?: boolean;
}

export interface IntrospectionField {
  node: FieldNode;
  /** Response path, by alias where the query gives one. */
  path: string[];
}

/**
 * The first `__schema` or `__type` field the operation selects, wherever it sits: at the
 * root, under another field, in an inline fragment or in a named one. Null when there is
 * none (or no operation to run, which execution itself refuses).
 */
export function findIntrospectionField(
  document: DocumentNode,
  operationName?: string | null,
): IntrospectionField | null {
  const operation = getOperationAST(document, operationName);
  if (!operation) return null;
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) {
      fragments.set(definition.name.value, definition);
    }
  }
  return findIn(operation.selectionSet, [], fragments, new Set());
}

function findIn(
  selectionSet: SelectionSetNode,
  path: string[],
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
  // A fragment searched once needs no second search: it holds the same fields wherever
  // it is spread. This also ends fragments that spread each other.
  searched: Set<string>,
): IntrospectionField | null {
  for (const selection of selectionSet.selections) {
    let found: IntrospectionField | null = null;
    if (selection.kind === Kind.FIELD) {
      const fieldPath = [...path, selection.alias?.value ?? selection.name.value];
      if (INTROSPECTION_FIELDS.has(selection.name.value)) {
        return { node: selection, path: fieldPath };
      }
      if (selection.selectionSet) {
        found = findIn(selection.selectionSet, fieldPath, fragments, searched);
      }
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      found = findIn(selection.selectionSet, path, fragments, searched);
    } else {
      const fragment = fragments.get(selection.name.value);
      if (!fragment || searched.has(fragment.name.value)) continue;
      searched.add(fragment.name.value);
      found = findIn(fragment.selectionSet, path, fragments, searched);
    }
    if (found) return found;
  }
  return null;
}

/** SPEC 7.1's refusal of a whole operation, located at the field that needs a credential. */
function refusal(field: IntrospectionField) {
  return {
    data: null,
    errors: [locatedError(refuse('authentication_required'), field.node, field.path)],
  };
}

/**
 * Holds introspection to signed-in callers (SPEC 5 opens only `login` and `locale` to
 * anyone; SPEC 4.1 keeps introspection on). An anonymous operation selecting `__schema`
 * or `__type` anywhere is refused as a whole, UNAUTHENTICATED with `data: null`, before
 * it runs; `__typename` stays open. With `allowAnonymous` it does nothing.
 */
export function useIntrospectionGate(options: IntrospectionGateOptions = {}): Plugin<Context> {
  if (options.allowAnonymous) return {};
  function gate(args: ExecutionArgs, stop: (result: ReturnType<typeof refusal>) => void) {
    if ((args.contextValue as Context).actor) return;
    const field = findIntrospectionField(args.document, args.operationName);
    if (field) stop(refusal(field));
  }
  return {
    onExecute: ({ args, setResultAndStopExecution }) => gate(args, setResultAndStopExecution),
    onSubscribe: ({ args, setResultAndStopExecution }) => gate(args, setResultAndStopExecution),
  };
}
