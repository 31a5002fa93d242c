// Many commits of one import by one user at once (issue 26, item 3): exactly one commits,
// every other answers at once (`import_busy` while it runs, `already_committed` after), and
// the same user's `me` is answered meanwhile. Before, five such commits held the user's whole
// share of the pool waiting for the first one, which waited for a connection of that share
// to write its progress: all five ended at the deadline with nothing committed.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { dataOf, freshWorkspaceHeaders } from '../../support/contacts.js';
import { startTestService, type TestService } from '../../support/service.js';
import { uploadFile } from './support.js';

/** Well past what any answer here needs, well short of the jest timeout. */
const DEADLINE_MS = 20_000;
let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({
    plugins: {},
    // Room for the 20 commits and the `me` beside them (the cap is 20 by default).
    env: { SVC_GRAPH_OPERATION_TIMEOUT: `${DEADLINE_MS}ms`, SVC_GRAPH_OPERATIONS_PER_USER: '25' },
  });
});

afterAll(() => svc.stop());

const ROWS = 10_000;
const COMMIT = `mutation ($id: UUID!) { importCommit(id: $id) { state createdCount } }`;
const MAPPING = [
  { column: 0, target: 'name' },
  { column: 1, target: 'identity:email' },
];

/** An import of `rows` contacts, mapped, by the admin of a fresh workspace. */
async function mappedImport(rows: number) {
  const { headers } = await freshWorkspaceHeaders(svc);
  const csv = ['name,email', ...Array.from({ length: rows }, (_, i) => `P${i},p${i}@example.com`)];
  const { body } = await uploadFile(svc, csv.join('\n'), 'c.csv', headers);
  const { id } = dataOf<{ id: string }>(body, 'importUpload');
  const mapped = await svc.graph(
    `mutation ($id: UUID!, $m: [ImportColumnInput!]!) { importSetMapping(id: $id, mapping: $m) { state } }`,
    { id, m: MAPPING },
    headers,
  );
  dataOf(mapped.body, 'importSetMapping');
  return { id, headers };
}

async function timed<T>(work: Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await work;
  return { ms: performance.now() - started, value };
}

describe('concurrent commits of one import by one user', () => {
  test.each([5, 10, 20])(
    '%i at once: one commits, the others answer at once, me stays fast',
    async (n) => {
      // Large enough that the winner takes a while and writes several batches of progress.
      const { id, headers } = await mappedImport(ROWS);
      const commits = Array.from({ length: n }, () => timed(svc.graph(COMMIT, { id }, headers)));
      let settled = false;
      const all = Promise.all(commits).finally(() => (settled = true));
      // The same user's `me`, asked again and again while the commits are in flight.
      const mes: { ms: number; value: { body: { errors?: unknown } } }[] = [];
      do mes.push(await timed(svc.graph('{ me { id } }', {}, headers)));
      while (!settled);
      const answers = await all;
      const meAnswer = mes.reduce((a, b) => (b.ms > a.ms ? b : a));

      const slowest = Math.max(...answers.map((a) => a.ms));
      // Figures for the report: the slowest answer and me's.
      const refusedBy = Math.max(...answers.filter((a) => a.value.body.errors).map((a) => a.ms));
      const seen = answers.map((a) => a.value.body.errors?.[0]?.extensions.reason ?? 'committed');
      process.stdout.write(
        `N=${n}: slowest commit answer ${Math.round(slowest)} ms, slowest refusal ${Math.round(refusedBy)} ms, me at most ${Math.round(meAnswer.ms)} ms of ${mes.length}, ${seen.join(' ')}\n`,
      );
      const won = answers.filter((a) => !a.value.body.errors);
      expect(won).toHaveLength(1);
      expect(dataOf(won[0]!.value.body, 'importCommit')).toEqual({
        state: 'committed',
        createdCount: ROWS,
      });
      const reasons = answers
        .filter((a) => a.value.body.errors)
        .map((a) => a.value.body.errors![0]!.extensions);
      expect(reasons).toHaveLength(n - 1);
      for (const reason of reasons) {
        expect(reason.code).toBe('CONFLICT');
        expect(['import_busy', 'already_committed']).toContain(reason.reason);
      }
      expect(meAnswer.value.body.errors).toBeUndefined();
      // Every other commit answered while the winner still ran, never after it.
      const winner = won[0]!.ms;
      for (const answer of answers) if (answer !== won[0]) expect(answer.ms).toBeLessThan(winner);
      expect(slowest).toBeLessThan(DEADLINE_MS / 2);
      expect(meAnswer.ms).toBeLessThan(winner);
      const [count] = await svc.db.database.sql<{ n: number }[]>`
        select count(*)::int as n from import_rows where import_id = ${id} and contact_id is not null`;
      expect(count!.n).toBe(ROWS);
    },
    60_000,
  );
});
