import type { Config } from '../config.js';
import { refuse } from '../errors.js';

/**
 * The page size a list field serves: `first` or `limit` as asked, the configured default
 * when left out, refused outside 1..SVC_GRAPH_PAGE_CAP (SPEC 8.1).
 */
export function pageSize(
  asked: number | null | undefined,
  config: Config,
  argument: 'first' | 'limit' = 'first',
): number {
  if (asked === null || asked === undefined) return config.graph.pageSize;
  const max = config.graph.pageCap;
  if (!Number.isInteger(asked) || asked < 1 || asked > max) {
    throw refuse(
      'first_out_of_range',
      { min: 1, max },
      { message: `graph: ${argument} must be between 1 and ${max}` },
    );
  }
  return asked;
}
