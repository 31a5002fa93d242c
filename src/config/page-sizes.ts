import { parseCount } from './numbers.js';
import { accept, parseList, refuse, type Parsed } from './parsed.js';

/**
 * SVC_LIST_PAGE_SIZES: whole numbers above zero, each listed once, ascending (SPEC 8.2).
 * The cap is checked by the loader, which knows SVC_GRAPH_PAGE_CAP.
 */
export function parsePageSizes(text: string): Parsed<number[]> {
  const sizes = parseList(text, parseCount);
  if (!sizes.ok) return sizes;
  const list = sizes.value;
  if (list.length === 0) return refuse('must list at least one page size');
  const repeated = list.find((size, i) => list.indexOf(size) !== i);
  if (repeated !== undefined)
    return refuse(`must list each page size once, but lists ${repeated} twice`);
  if (list.some((size, i) => i > 0 && size < (list[i - 1] ?? 0))) {
    return refuse('must list page sizes in ascending order');
  }
  return accept(list);
}
