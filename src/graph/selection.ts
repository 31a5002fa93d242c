import {
  isAbstractType,
  isObjectType,
  Kind,
  TypeInfo,
  visit,
  visitWithTypeInfo,
  type FieldNode,
  type GraphQLResolveInfo,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';

/**
 * Whether the field being resolved selects `path` below it: `selects(info, 'total')` its
 * own field `total`, `selects(info, 'items', 'identities')` a field `identities` of its
 * field `items` (through inline fragments and fragment spreads, under any alias).
 * Directives are not read: a field under `@include` may run, so it counts as selected.
 * Lets a resolver skip a statement nobody asked for, or fold one into its own.
 */
export function selects(info: GraphQLResolveInfo, ...path: string[]): boolean {
  return selected(info, ...path).length > 0;
}

/** The nodes of the fields at `path` below the field being resolved (see {@link selects}). */
export function selected(info: GraphQLResolveInfo, ...path: string[]): readonly FieldNode[] {
  let nodes: readonly FieldNode[] = info.fieldNodes;
  for (const name of path) {
    nodes = nodes.flatMap((node) => fieldsNamed(info, node.selectionSet, name));
    if (nodes.length === 0) return nodes;
  }
  return nodes;
}

/** The fields called `name` in a selection set, fragments included. */
function fieldsNamed(
  info: GraphQLResolveInfo,
  set: SelectionSetNode | undefined,
  name: string,
): FieldNode[] {
  const found: FieldNode[] = [];
  const seen = new Set<string>();
  function within(selections: SelectionSetNode | undefined): void {
    for (const selection of selections?.selections ?? []) {
      if (selection.kind === Kind.FIELD) {
        if (selection.name.value === name) found.push(selection);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        within(selection.selectionSet);
      } else if (!seen.has(selection.name.value)) {
        seen.add(selection.name.value);
        within(info.fragments[selection.name.value]?.selectionSet);
      }
    }
  }
  within(set);
  return found;
}

/** Per operation (documents are parsed once and reused): type name to the fields asked of it. */
const askedOf = new WeakMap<OperationDefinitionNode, Map<string, ReadonlySet<string>>>();

/**
 * Every field the operation being run asks of objects of type `typeName`, anywhere in it
 * (its fragments included, and fields asked of an interface or union the type belongs
 * to), under any alias or directive. A read that serves every such object of the request
 * may leave out what no field asks for.
 */
export function fieldsAskedOf(info: GraphQLResolveInfo, typeName: string): ReadonlySet<string> {
  let byType = askedOf.get(info.operation);
  if (!byType) askedOf.set(info.operation, (byType = new Map()));
  let asked = byType.get(typeName);
  if (asked) return asked;
  const type = info.schema.getType(typeName);
  const found = new Set<string>();
  if (isObjectType(type)) {
    const typeInfo = new TypeInfo(info.schema);
    const visitor = visitWithTypeInfo(typeInfo, {
      Field() {
        const parent = typeInfo.getParentType();
        const applies =
          parent === type || (isAbstractType(parent) && info.schema.isSubType(parent, type));
        if (applies) found.add(typeInfo.getFieldDef()?.name ?? '');
      },
    });
    visit(info.operation, visitor);
    for (const fragment of Object.values(info.fragments)) visit(fragment, visitor);
  }
  byType.set(typeName, (asked = found));
  return asked;
}
