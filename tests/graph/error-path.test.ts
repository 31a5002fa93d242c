import { describe, expect, test } from '@jest/globals';
import { Kind, parse, visit, type ASTNode, type DocumentNode } from 'graphql';
import { literalPlace, requestErrorField } from '../../src/graph/error-path.js';

/** The first node of `kind` whose printed source starts with `text`. */
function nodeAt(document: DocumentNode, kind: Kind, text: string): ASTNode {
  let found: ASTNode | undefined;
  visit(document, {
    enter(node) {
      const source = node.loc?.source.body.slice(node.loc.start, node.loc.end) ?? '';
      if (!found && node.kind === kind && source.startsWith(text)) found = node;
    },
  });
  if (!found) throw new Error(`no ${kind} ${text}`);
  return found;
}

describe('requestErrorField: the field a request error is about', () => {
  test('a literal is placed in the innermost field holding it, by response keys', () => {
    const document = parse('{ a: contact(id: "x") { tasks(first: "y") { id } } }');
    expect(requestErrorField(document, nodeAt(document, Kind.STRING, '"y"'))?.path).toEqual([
      'a',
      'tasks',
    ]);
    expect(requestErrorField(document, nodeAt(document, Kind.STRING, '"x"'))?.path).toEqual(['a']);
  });

  test('a node inside a fragment is placed at the fragment’s first spread', () => {
    const document = parse(`
      { me { ...Who } other: me { ...Who } }
      fragment Who on User { email(format: "z") }`);
    expect(requestErrorField(document, nodeAt(document, Kind.STRING, '"z"'))?.path).toEqual([
      'me',
      'email',
    ]);
  });

  test('a variable is placed at the first field given it, however deep in its argument', () => {
    const document = parse(`
      query ($d: Date, $t: String) { version made: createTask(input: {title: $t, due: [$d]}) { id } }`);
    const definition = nodeAt(document, Kind.VARIABLE_DEFINITION, '$d');
    expect(requestErrorField(document, definition)?.path).toEqual(['made']);
  });

  test('nested fragments are walked once each, so a fragment bomb costs one walk', () => {
    const levels = Array.from(
      { length: 30 },
      (_, i) => `fragment F${i} on Query { ...F${i + 1} ...F${i + 1} }`,
    );
    const document = parse(`{ ...F0 } ${levels.join(' ')} fragment F30 on Query { version }`);
    expect(requestErrorField(document, nodeAt(document, Kind.FIELD, 'version'))?.path).toEqual([
      'version',
    ]);
  });

  test('a node outside every field has none', () => {
    const document = parse('query ($unused: Int) { version }');
    expect(
      requestErrorField(document, nodeAt(document, Kind.VARIABLE_DEFINITION, '$unused')),
    ).toBeUndefined();
  });
});

describe('literalPlace', () => {
  test('names the argument and the place inside it, as graphql-js does for a variable', () => {
    const document = parse('{ f(input: {list: [1, "two"]}, other: 3) }');
    const field = nodeAt(document, Kind.FIELD, 'f') as never;
    expect(literalPlace(field, nodeAt(document, Kind.STRING, '"two"') as never)).toBe(
      'Argument "input" got invalid value "two" at "input.list[1]"',
    );
    expect(literalPlace(field, nodeAt(document, Kind.INT, '3') as never)).toBe(
      'Argument "other" got invalid value 3',
    );
  });
});
