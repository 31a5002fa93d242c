// Paging for every domain: page sizes, opaque cursors and pages, with no graph types.
export { decodeCursor, encodeCursor } from './cursor.js';
export { toPage, type Page, type PageInfo } from './page.js';
export { pageSize } from './size.js';
