import { Kind, type GraphQLResolveInfo, type SelectionSetNode } from 'graphql';

/**
 * Whether the field being resolved selects `name` among its own fields (through inline
 * fragments and fragment spreads). Directives are not read: a field under `@include` may
 * run, so it counts as selected. Lets a resolver skip a statement nobody asked for.
 */
export function selects(info: GraphQLResolveInfo, name: string): boolean {
  const seen = new Set<string>();
  function within(set: SelectionSetNode | undefined): boolean {
    for (const selection of set?.selections ?? []) {
      if (selection.kind === Kind.FIELD) {
        if (selection.name.value === name) return true;
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        if (within(selection.selectionSet)) return true;
      } else if (!seen.has(selection.name.value)) {
        seen.add(selection.name.value);
        if (within(info.fragments[selection.name.value]?.selectionSet)) return true;
      }
    }
    return false;
  }
  return info.fieldNodes.some((node) => within(node.selectionSet));
}
