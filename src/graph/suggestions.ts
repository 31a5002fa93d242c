import { GraphQLError } from 'graphql';
import type { ExecutionResult } from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import type { Context } from '../context.js';

/**
 * graphql-js ends a validation message with its suggestions (`Cannot query field "contactz"
 * on type "Query". Did you mean "contact" or "contacts"?`, `... Did you mean the enum value
 * "X"?`, `... Did you mean to use an inline fragment on "T"?`): always last, always this
 * phrase.
 */
const SUGGESTION = /\s*Did you mean .*$/s;

/** `message` without graphql-js's "Did you mean …" suggestions. */
export function withoutSuggestions(message: string): string {
  return message.replace(SUGGESTION, '');
}

/** A copy of `error` without suggestions; the original (maybe cached) is left as it was. */
function unsuggested(error: Error): Error {
  if (!SUGGESTION.test(error.message)) return error;
  if (!(error instanceof GraphQLError)) return new Error(withoutSuggestions(error.message));
  return new GraphQLError(withoutSuggestions(error.message), {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    originalError: error.originalError,
    extensions: error.extensions,
  });
}

export interface SuggestionGateOptions {
  /** Whether callers that are not signed in see suggestions (SVC_DEV_GRAPHIQL). @default false */
  allowAnonymous?: boolean;
}

/**
 * Holds validation's suggestions to signed-in callers, as introspection is
 * (introspection.ts): a suggestion names fields, arguments and types of the schema, so an
 * anonymous caller could read the schema a guess at a time (`{ contactz }`,
 * `mutation { logi }`). Register it after useDocumentCache: that cache keeps the
 * validation result as graphql-js made it, and this hands an anonymous caller copies
 * without suggestions, so neither kind of caller ever sees the other's.
 */
export function useSuggestionGate(options: SuggestionGateOptions = {}): Plugin<Context> {
  if (options.allowAnonymous) return {};
  return {
    onValidate({ context }) {
      if ((context as Partial<Context>).actor) return;
      return ({ result, setResult }) => {
        if (result.length > 0) setResult(result.map(unsuggested));
      };
    },
    // Variables are coerced when the operation starts, after validation: a value naming an
    // unknown input field or enum value is answered with a suggestion too
    // (`Field "namz" is not defined by type "CreateContactInput". Did you mean "name"?`).
    onExecute({ args }) {
      if ((args.contextValue as Partial<Context>).actor) return;
      return {
        onExecuteDone({ result, setResult }) {
          if (isAsyncIterable(result) || !result.errors?.length) return;
          setResult(withoutErrorSuggestions(result));
        },
      };
    },
  };
}

/** `result` with each of its errors' suggestions stripped (a new object when any had one). */
function withoutErrorSuggestions(result: ExecutionResult): ExecutionResult {
  const errors = result.errors ?? [];
  if (!errors.some((error) => SUGGESTION.test(error.message))) return result;
  return { ...result, errors: errors.map((error) => unsuggested(error) as GraphQLError) };
}
