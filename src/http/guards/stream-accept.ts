/**
 * Whether a request asks for a Server-Sent Events stream (SPEC 4.1): its Accept names
 * `text/event-stream` and no JSON type. Anything else gets a JSON answer, and a
 * subscription asked that way is refused in JSON rather than streamed.
 */
export function streamRequested(accept: string | null | undefined): boolean {
  if (!accept) return false;
  const types = accept.split(',').map((part) => (part.split(';')[0] ?? '').trim().toLowerCase());
  return (
    types.includes('text/event-stream') &&
    !types.some((type) => type === 'application/json' || type.endsWith('+json'))
  );
}
