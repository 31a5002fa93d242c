// GET /api/plugins/importer/exports/:id/file: the file of an export its caller started
// (docs/importer.md "Export"). The host's guard has already required a session or a
// token holding imports:read and applied the plugin-route bounds (SVC_STREAMS_PER_USER,
// SVC_STREAM_LIFETIME); this route also needs contacts:read, as exportContacts did.
import {
  AppError,
  callerHolds,
  type PluginRoute,
  type RouteContext,
} from '../../src/plugin-sdk/index.js';
import { exportStream, findOwnExport, planExport } from './export.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const CONTENT_TYPES = {
  csv: 'text/csv; charset=utf-8',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
} as const;

function notFound(): Response {
  return Response.json({ error: 'not found' }, { status: 404 });
}

async function serveExport(_request: Request, ctx: RouteContext): Promise<Response> {
  const { id = '' } = ctx.params;
  const { actor, workspaceId } = ctx;
  if (!actor || !workspaceId || !UUID.test(id)) return notFound();
  // Another workspace's export, another user's, an expired one: as one that never was.
  const row = await findOwnExport(ctx.database.db, workspaceId, actor.userId, id);
  if (!row) return notFound();
  if (!callerHolds(actor, 'contacts:read')) {
    return Response.json({ error: 'scope required: contacts:read' }, { status: 403 });
  }
  let plan;
  try {
    plan = await planExport({ ...ctx, actor, workspaceId }, row);
  } catch (error) {
    // A filter that no longer holds (its field archived since): the reason, as the graph says it.
    if (!(error instanceof AppError) || error.code === 'INTERNAL') throw error;
    return Response.json(
      { error: error.message, reason: error.reason },
      { status: error.code === 'NOT_FOUND' ? 404 : 409 },
    );
  }
  const day = row.createdAt.toISOString().slice(0, 10);
  return new Response(exportStream(ctx.database.db, plan, ctx.log), {
    status: 200,
    headers: {
      'content-type': CONTENT_TYPES[plan.format],
      'content-disposition': `attachment; filename="contacts-${day}.${plan.format}"`,
      'cache-control': 'private, no-store',
      'x-content-type-options': 'nosniff',
    },
  });
}

/** The export's download (not public: behind the host's imports:read guard and route bounds). */
export const exportRoute: PluginRoute = {
  method: 'GET',
  path: 'exports/:id/file',
  handler: serveExport,
};
