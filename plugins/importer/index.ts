// The importer plugin (SPEC 2.10): contacts from a CSV or spreadsheet, read on a worker
// thread under limits and staged row by row with reasons (docs/importer.md).
import { definePlugin } from '../../src/plugin-sdk/index.js';
import { importerContactData } from './contact-data.js';
import { exportSweep } from './export.js';
import { exportRoute } from './export-route.js';
import './graph.js';
import { importerSweeps } from './sweeps.js';

export { FILE_MAX_BYTES, PARSE_LIMITS } from './service.js';

export default definePlugin({
  id: 'importer',
  // Tokens may be narrowed to imports:read / imports:write.
  areas: ['imports'],
  // The export's download: a token needs imports:read (and the route asks contacts:read).
  routeArea: 'imports',
  routes: [exportRoute],
  events: ['import.staged', 'import.completed'],
  // Uncommitted imports expire, committed imports' rows too, and exports past their hour
  // (docs/importer.md).
  sweeps: [...importerSweeps, exportSweep],
  // Staged rows link contacts: unlinked (and blanked) on an erasure, relinked on a merge.
  contactData: importerContactData,
  reasons: {
    import_not_found: { code: 'NOT_FOUND', message: 'import not found' },
    mapping_invalid: { code: 'VALIDATION', message: 'mapping invalid' },
    mapping_required: { code: 'CONFLICT', message: 'map the columns before committing' },
    mapping_locked: { code: 'CONFLICT', message: 'the import no longer takes a mapping' },
    already_committed: { code: 'CONFLICT', message: 'the import was committed before' },
    import_busy: {
      code: 'CONFLICT',
      message: 'another request is committing or mapping the import; ask again once it ends',
    },
    file_too_large: {
      code: 'VALIDATION',
      message: (meta) => `the file may be at most ${String(meta.maxBytes)} bytes`,
    },
    export_too_large: {
      code: 'VALIDATION',
      message: (meta) =>
        `an .xlsx export holds at most ${String(meta.max)} contacts; narrow it or export a CSV`,
    },
    file_unreadable: {
      code: 'VALIDATION',
      message: 'not a CSV or spreadsheet the service reads',
    },
  },
});
