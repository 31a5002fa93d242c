import type { DocumentNode, GraphQLSchema, ValidationRule } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { LRUCache } from 'lru-cache';

/** Documents (and parse failures) kept, by text: Yoga's defaults. */
const DOCUMENTS_MAX = 1024;
const DOCUMENTS_TTL_MS = 3_600_000;
/** Distinct rule lists validated with: they come from code, not from requests. */
const RULE_LISTS_MAX = 16;

type Validated = WeakMap<GraphQLSchema, WeakMap<DocumentNode, readonly Error[]>>;

function sameRules(a: readonly ValidationRule[], b: readonly ValidationRule[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i += 1) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Yoga's parse and validation cache (its `parserAndValidationCache`, turned off in
 * server.ts), with the same keys and bounds: a document by its text, a parse failure by
 * its text, a validation by rule list, schema and document. Yoga names the rule list by
 * joining its rules' names on every request; here the list is compared, rule by rule,
 * with the last one named (envelop hands each request a copy of the same rules).
 */
export function useDocumentCache(): Plugin {
  const documents = new LRUCache<string, DocumentNode>({
    max: DOCUMENTS_MAX,
    ttl: DOCUMENTS_TTL_MS,
  });
  const parseFailures = new LRUCache<string, Error>({ max: DOCUMENTS_MAX, ttl: DOCUMENTS_TTL_MS });
  const byRules = new LRUCache<string, Validated>({ max: RULE_LISTS_MAX });
  let lastRules: readonly ValidationRule[] = [];
  let lastKey = '';

  function validatedWith(rules: readonly ValidationRule[] | undefined): Validated {
    const list = rules ?? [];
    if (!sameRules(list, lastRules)) {
      lastKey = list.map((rule) => rule.name).join(',');
      lastRules = [...list];
    }
    let validated = byRules.get(lastKey);
    if (!validated) byRules.set(lastKey, (validated = new WeakMap()));
    return validated;
  }

  return {
    onParse({ params, setParsedDocument }) {
      const text = params.source.toString();
      const document = documents.get(text);
      if (document) {
        setParsedDocument(document);
        return;
      }
      const failure = parseFailures.get(text);
      if (failure) throw failure;
      return ({ result }) => {
        if (result instanceof Error) parseFailures.set(text, result);
        else if (result) documents.set(text, result);
      };
    },
    onValidate({ params: { schema, documentAST, rules }, setResult }) {
      if (!schema) return;
      const validated = validatedWith(rules);
      let bySchema = validated.get(schema);
      if (!bySchema) validated.set(schema, (bySchema = new WeakMap()));
      const known = bySchema.get(documentAST);
      if (known) {
        setResult(known);
        return;
      }
      const store = bySchema;
      return ({ result }) => {
        if (result) store.set(documentAST, result);
      };
    },
  };
}
