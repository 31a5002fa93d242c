import { streamRequested } from './stream-accept.js';

/** The 405 body of a graph operation sent with GET while GET queries are off. */
export const GRAPH_GET_REFUSED_BODY = Object.freeze({
  error: 'method not allowed: send graph operations with POST',
} as const);

/**
 * Whether a GET (or HEAD) of the graph is refused (SPEC 4.1 lists GET only for the
 * interactive page). A GET query carrying the session cookie is the shape of a
 * cross-site read and of an answer a cache may keep, so it runs only with
 * SVC_DEV_GRAPHIQL. A GET asking for an event stream still runs, since EventSource can
 * only GET: no navigation, image, script or form can ask for `text/event-stream`, and
 * fetch or EventSource from another origin cannot read the stream without CORS.
 * Mutations stay refused over GET either way (Yoga answers 405).
 */
export function graphGetRefused(
  method: string,
  accept: string | undefined,
  devGraphiql: boolean,
): boolean {
  if (method !== 'GET' && method !== 'HEAD') return false;
  return !devGraphiql && !streamRequested(accept);
}
