/** Where a page ends: whether more rows follow, and the cursor to ask for them with. */
export interface PageInfo {
  hasNextPage: boolean;
  endCursor: string | null;
}

/**
 * One page of rows in order, each with the cursor that resumes after it. A domain idea:
 * services answer pages; the graph shows them as SPEC 2.5's connections
 * (src/graph/connection.ts), the CLI and the agent tools read them as they are.
 */
export interface Page<T> {
  edges: { cursor: string; node: T }[];
  pageInfo: PageInfo;
}

/**
 * A page from `size + 1` rows read in order: the extra row only tells that another
 * page exists.
 */
export function toPage<T>(rows: T[], size: number, cursorOf: (row: T) => string): Page<T> {
  const page = rows.slice(0, size);
  const edges = page.map((node) => ({ cursor: cursorOf(node), node }));
  return {
    edges,
    pageInfo: { hasNextPage: rows.length > size, endCursor: edges.at(-1)?.cursor ?? null },
  };
}
