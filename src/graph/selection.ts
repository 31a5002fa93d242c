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

/**
 * What {@link selected} found, by the first node of the field being resolved and the path:
 * documents are parsed once and reused, so a field asks the same of every request.
 */
const found = new WeakMap<
  FieldNode,
  Map<string, { from: readonly FieldNode[]; nodes: readonly FieldNode[] }>
>();

function sameNodes(a: readonly FieldNode[], b: readonly FieldNode[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i += 1) if (a[i] !== b[i]) return false;
  return true;
}

/** The nodes of the fields at `path` below the field being resolved (see {@link selects}). */
export function selected(info: GraphQLResolveInfo, ...path: string[]): readonly FieldNode[] {
  const first = info.fieldNodes[0];
  if (!first) return [];
  let byPath = found.get(first);
  if (!byPath) found.set(first, (byPath = new Map()));
  const key = path.join('.');
  const known = byPath.get(key);
  // The same nodes (a field merged from others is a different set, with variables' skips).
  if (known && sameNodes(known.from, info.fieldNodes)) return known.nodes;
  let nodes: readonly FieldNode[] = info.fieldNodes;
  for (const name of path) {
    nodes = nodes.flatMap((node) => fieldsNamed(info, node.selectionSet, name));
    if (nodes.length === 0) break;
  }
  byPath.set(key, { from: info.fieldNodes, nodes });
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
