import {
  Kind,
  type DocumentNode,
  type FragmentDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { refuse } from '../errors.js';
import { DEPTH_MAX, TOKENS_MAX } from '../limits.js';

/** Characters a GraphQL name or number continues with. */
const WORD = /[_0-9A-Za-z.+-]/;

/**
 * What a query text holds before it is parsed: how deep its brackets (`{`, `[`) nest and
 * how many tokens it has (a name, number or string is one, each punctuation mark one),
 * outside comments. Stops once past either limit, so a megabyte costs one short scan.
 */
export function measureText(
  text: string,
  limits: { maxDepth: number; maxTokens: number },
): { depth: number; tokens: number } {
  let depth = 0;
  let deepest = 0;
  let tokens = 0;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i] as string;
    if (c === '#') {
      while (i < text.length && text[i] !== '\n' && text[i] !== '\r') i += 1;
      continue;
    }
    if (c === ' ' || c === ',' || c === '\n' || c === '\r' || c === '\t' || c === '\ufeff')
      continue;
    tokens += 1;
    if (c === '"') i = stringEnd(text, i);
    else if (WORD.test(c)) while (i + 1 < text.length && WORD.test(text[i + 1] as string)) i += 1;
    else if (c === '{' || c === '[') depth += 1;
    else if (c === '}' || c === ']') depth -= 1;
    deepest = Math.max(deepest, depth);
    if (deepest > limits.maxDepth || tokens > limits.maxTokens) break;
  }
  return { depth: deepest, tokens };
}

/** The index of the closing quote of the string (or block string) opening at `start`. */
function stringEnd(text: string, start: number): number {
  if (text.startsWith('"""', start)) {
    for (let i = start + 3; i < text.length; i += 1) {
      if (text[i] === '\\' && text.startsWith('"""', i + 1)) i += 3;
      else if (text.startsWith('"""', i)) return i + 2;
    }
    return text.length;
  }
  for (let i = start + 1; i < text.length; i += 1) {
    if (text[i] === '\\') i += 1;
    else if (text[i] === '"' || text[i] === '\n') return i;
  }
  return text.length;
}

/**
 * How deep a document's selections nest once fragments are spread, counting each spread
 * as a level (a chain of fragments nests as deeply as the brackets it stands for). Each
 * fragment is measured once, and the walk stops past `max`, so neither a long chain nor
 * a fan of spreads can make it costly or overflow the stack.
 */
export function selectionDepth(document: DocumentNode, max: number): number {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions) {
    if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  }
  const below = new Map<string, number>();
  const measuring = new Set<string>();

  function depthOf(set: SelectionSetNode, level: number): number {
    if (level > max) return level;
    let deepest = level;
    for (const selection of set.selections) {
      let reached = level;
      if (selection.kind !== Kind.FRAGMENT_SPREAD) {
        if (selection.selectionSet) reached = depthOf(selection.selectionSet, level + 1);
      } else {
        reached = spreadDepth(selection.name.value, level + 1);
      }
      deepest = Math.max(deepest, reached);
      if (deepest > max) return deepest;
    }
    return deepest;
  }

  function spreadDepth(name: string, level: number): number {
    const known = below.get(name);
    if (known !== undefined) return level + known;
    const fragment = fragments.get(name);
    // An unknown fragment or a cycle: validation refuses both.
    if (!fragment || measuring.has(name)) return level;
    measuring.add(name);
    const reached = depthOf(fragment.selectionSet, level);
    measuring.delete(name);
    if (reached <= max) below.set(name, reached - level);
    return reached;
  }

  let deepest = 0;
  for (const d of document.definitions) {
    if (d.kind === Kind.OPERATION_DEFINITION)
      deepest = Math.max(deepest, depthOf(d.selectionSet, 1));
    else if (d.kind === Kind.FRAGMENT_DEFINITION)
      deepest = Math.max(deepest, spreadDepth(d.name.value, 1));
    if (deepest > max) break;
  }
  return deepest;
}

/**
 * Refuses an operation too large or nested too deep before graphql-js spends on it:
 * past `maxTokens` tokens (`query_too_large`, meta `max`), since parsing and validating
 * are synchronous and a megabyte of aliases holds the event loop for a second; past
 * `maxDepth` levels (`query_too_deep`, meta `max`), since graphql-js recurses once a level.
 * The text is measured before parsing (the parser recurses per bracket), the document
 * before validation (which recurses per fragment spread), so neither can overflow the
 * stack whatever the body holds.
 */
export function useDocumentLimits(options: { maxDepth?: number; maxTokens?: number } = {}): Plugin {
  const max = options.maxDepth ?? DEPTH_MAX;
  const maxTokens = options.maxTokens ?? TOKENS_MAX;
  // Parsed documents are cached and reused: each is measured once.
  const measured = new WeakMap<DocumentNode, boolean>();
  return {
    onParse({ params }) {
      const text = typeof params.source === 'string' ? params.source : params.source.body;
      const { depth, tokens } = measureText(text, { maxDepth: max, maxTokens });
      if (tokens > maxTokens) throw refuse('query_too_large', { max: maxTokens });
      if (depth > max) throw refuse('query_too_deep', { max });
      return ({ result, replaceParseResult }) => {
        if (result instanceof Error || result === null) return;
        let tooDeep = measured.get(result);
        if (tooDeep === undefined)
          measured.set(result, (tooDeep = selectionDepth(result, max) > max));
        if (tooDeep) replaceParseResult(refuse('query_too_deep', { max }));
      };
    },
  };
}
