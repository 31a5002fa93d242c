import type { Config } from '../config.js';
import { requestOutbound, type OutboundRequest, type OutboundResult } from './request.js';

/**
 * Outbound HTTP for plugins (docs/plugins.md "Outbound HTTP"): SPEC 8.2's address rules under
 * SVC_OUTBOUND_ALLOWED_HOSTS on every hop, the connection pinned to the judged address,
 * redirects only when `maxRedirects` asks (each hop judged), credential headers kept to the
 * first URL's origin, time and size bounded. It never throws for what the far side does:
 * the outcome says answered, too_large, refused or failed (describe the last three with
 * `describeOutcome`, which never repeats the URL or a header).
 */
export function fetchOutbound(config: Config, request: OutboundRequest): Promise<OutboundResult> {
  return requestOutbound({
    ...request,
    allow: config.outbound,
    allowSetting: 'SVC_OUTBOUND_ALLOWED_HOSTS',
  });
}
