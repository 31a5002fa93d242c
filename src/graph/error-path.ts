import {
  Kind,
  print,
  type ASTNode,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';

type Path = readonly string[];

export interface ErrorField {
  /** The response path of the field. */
  path: Path;
  node: FieldNode;
}

/**
 * The response path of the field a request error (validation or a variable's value) is
 * about, so it carries `path` as every error does (SPEC 7.1): the field holding the
 * refused node, or for a variable the first field given it. A fragment is followed at its
 * first spread only, so a document of nested fragments costs one walk.
 */
export function requestErrorField(document: DocumentNode, node: ASTNode): ErrorField | undefined {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION)
      fragments.set(definition.name.value, definition);
  }
  const matches =
    node.kind === Kind.VARIABLE_DEFINITION
      ? usesVariable(node.variable.name.value)
      : (field: { loc?: ASTNode['loc'] }) => contains(field, node);
  const expanded = new Set<string>();

  function walk(selectionSet: SelectionSetNode, path: Path): ErrorField | undefined {
    for (const selection of selectionSet.selections) {
      let found: ErrorField | undefined;
      if (selection.kind === Kind.FIELD) {
        const fieldPath = [...path, (selection.alias ?? selection.name).value];
        found = selection.selectionSet && walk(selection.selectionSet, fieldPath);
        if (!found && matches(selection)) found = { path: fieldPath, node: selection };
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        found = walk(selection.selectionSet, path);
      } else {
        const fragment = fragments.get(selection.name.value);
        if (fragment && !expanded.has(fragment.name.value)) {
          expanded.add(fragment.name.value);
          found = walk(fragment.selectionSet, path);
        }
      }
      if (found) return found;
    }
    return undefined;
  }

  for (const definition of document.definitions) {
    if (definition.kind !== Kind.OPERATION_DEFINITION) continue;
    if (node.kind === Kind.VARIABLE_DEFINITION && !definition.variableDefinitions?.includes(node))
      continue;
    const found = walk(definition.selectionSet, []);
    if (found) return found;
  }
  return undefined;
}

function contains(outer: { loc?: ASTNode['loc'] }, inner: ASTNode): boolean {
  if (!outer.loc || !inner.loc) return false;
  return outer.loc.start <= inner.loc.start && inner.loc.end <= outer.loc.end;
}

/** Whether a field's arguments name `$name`, however deep in an object or a list. */
function usesVariable(name: string) {
  const inValue = (value: ValueNode): boolean => {
    if (value.kind === Kind.VARIABLE) return value.name.value === name;
    if (value.kind === Kind.LIST) return value.values.some(inValue);
    if (value.kind === Kind.OBJECT) return value.fields.some((field) => inValue(field.value));
    return false;
  };
  return (field: { arguments?: readonly { value: ValueNode }[] }) =>
    (field.arguments ?? []).some((argument) => inValue(argument.value));
}

/**
 * Where a literal sits in a field's arguments, in the words graphql-js uses for a
 * variable's value: `Argument "input" got invalid value "tomorrow" at "input.dueOn"`.
 */
export function literalPlace(field: FieldNode, literal: ValueNode): string | undefined {
  const within = (value: ValueNode, at: string): string | undefined => {
    if (value === literal) return at;
    if (value.kind === Kind.LIST) {
      for (const [index, item] of value.values.entries()) {
        const found = within(item, `${at}[${index}]`);
        if (found) return found;
      }
    }
    if (value.kind === Kind.OBJECT) {
      for (const field of value.fields) {
        const found = within(field.value, `${at}.${field.name.value}`);
        if (found) return found;
      }
    }
    return undefined;
  };
  for (const argument of field.arguments ?? []) {
    const name = argument.name.value;
    const at = within(argument.value, name);
    if (at === undefined) continue;
    const where = at === name ? '' : ` at "${at}"`;
    return `Argument "${name}" got invalid value ${print(literal)}${where}`;
  }
  return undefined;
}
