import { Kind, type FieldNode, type GraphQLResolveInfo, type SelectionSetNode } from 'graphql';

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
