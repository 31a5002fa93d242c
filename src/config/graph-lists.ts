import type { EnvReader, GroupReader } from './reader.js';
import { count, locale, pageSizes, timerDuration, wholeNumber } from './schemas.js';
import type { Config } from './types.js';

type GraphLists = Pick<
  Config['graph'],
  'pageSize' | 'pageCap' | 'toastMs' | 'listPageSizes' | 'listPageSize' | 'formatLocale'
>;

const CAP = 'SVC_GRAPH_PAGE_CAP';
const SIZES = 'SVC_LIST_PAGE_SIZES';
const DEFAULT_PAGE_SIZE = '50';
const DEFAULT_SIZES = '10,20,50,100';
const DEFAULT_LIST_PAGE_SIZE = '20';

/**
 * Graph lists and display (SPEC 8.2). The relations between variables apply to the value
 * in effect, default or not: a cap lowered below a default asks the operator to set that
 * variable too. A relation is only checked when both variables parsed, so one typo gives
 * one problem; a value breaking one falls back to its default, clamped to the other
 * variable, so the config stays consistent.
 */
export function readGraphLists(env: EnvReader): GraphLists {
  const r = env.group('graph-lists');
  const pageCap = r.read(CAP, wholeNumber(1, 1250), '200');
  const pageSize = readPageSize(r, pageCap);
  const toastMs = r.read('SVC_TOAST_DURATION', timerDuration, '6s');
  const listPageSizes = readListPageSizes(r, pageCap);
  const listPageSize = readListPageSize(r, listPageSizes);
  const formatLocale = r.read('SVC_FORMAT_LOCALE', locale, 'es-ES');
  return { pageSize, pageCap, toastMs, listPageSizes, listPageSize, formatLocale };
}

function readPageSize(r: GroupReader, cap: number): number {
  const name = 'SVC_GRAPH_PAGE_SIZE';
  const size = r.read(name, count, DEFAULT_PAGE_SIZE);
  if (size <= cap) return size;
  if (r.parsed(name, CAP)) {
    r.refuseRelation(name, `must not be above ${CAP}, which is ${cap}`, DEFAULT_PAGE_SIZE);
  }
  return Math.min(Number(DEFAULT_PAGE_SIZE), cap);
}

function readListPageSizes(r: GroupReader, cap: number): number[] {
  const sizes = r.read(SIZES, pageSizes, DEFAULT_SIZES);
  if (sizes.every((size) => size <= cap)) return sizes;
  if (r.parsed(SIZES, CAP)) {
    r.refuseRelation(SIZES, `must not list a size above ${CAP}, which is ${cap}`, DEFAULT_SIZES);
  }
  const kept = DEFAULT_SIZES.split(',')
    .map(Number)
    .filter((size) => size <= cap);
  return kept.length > 0 ? kept : [cap];
}

function readListPageSize(r: GroupReader, sizes: number[]): number {
  const name = 'SVC_LIST_PAGE_SIZE';
  const size = r.read(name, count, DEFAULT_LIST_PAGE_SIZE);
  if (sizes.includes(size)) return size;
  // A refused cap may have replaced the list silently, so the list is then not the operator's.
  if (r.parsed(name, SIZES, CAP)) {
    r.refuseRelation(
      name,
      `must be one of ${SIZES}, which are ${sizes.join(', ')}`,
      DEFAULT_LIST_PAGE_SIZE,
    );
  }
  const fallback = Number(DEFAULT_LIST_PAGE_SIZE);
  return sizes.includes(fallback) ? fallback : (sizes[0] ?? fallback);
}
