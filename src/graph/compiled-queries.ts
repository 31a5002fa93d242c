import {
  getOperationAST,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLSchema,
} from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import type { Plugin } from 'graphql-yoga';

/** A document's compiled queries by operation name; null where graphql-js runs it. */
const compiled = new WeakMap<DocumentNode, Map<string, CompiledQuery | null>>();

/**
 * The compiled form of a query operation, made on its first run and kept as long as the
 * parsed document is (Yoga's document cache holds each text's one document); null for a
 * mutation, a subscription, or what graphql-jit cannot compile.
 */
function compiledQuery(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
): CompiledQuery | null {
  let byName = compiled.get(document);
  if (!byName) compiled.set(document, (byName = new Map()));
  const key = operationName ?? '';
  let query = byName.get(key);
  if (query === undefined) {
    query = null;
    if (getOperationAST(document, operationName)?.operation === 'query') {
      const made = compileQuery(schema, document, operationName ?? undefined);
      if (isCompiledQuery(made)) query = made;
    }
    byName.set(key, query);
  }
  return query;
}

/**
 * Runs queries through graphql-jit: a document's operation compiled once into plain
 * functions, instead of graphql-js walking the document for every request. Only an
 * answer without errors is taken from it: a query whose run met any error (a refusal,
 * a malformed variable, a failure) is run again by graphql-js, whose errors are the
 * contract's shapes (SPEC 7: locations, paths, messages). Queries only read, so the
 * second run changes nothing; mutations and subscriptions never take this path.
 */
export function useCompiledQueries(): Plugin {
  return {
    onExecute({ args, executeFn, setExecuteFn }) {
      const query = compiledQuery(args.schema, args.document, args.operationName);
      if (!query) return;
      setExecuteFn(async (executeArgs) => {
        const result = (await query.query(
          executeArgs.rootValue,
          executeArgs.contextValue,
          executeArgs.variableValues,
        )) as ExecutionResult;
        if (!result.errors?.length) return result;
        return executeFn(executeArgs);
      });
    },
  };
}
