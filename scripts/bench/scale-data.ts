// The data of the scale benchmarks (scale.ts, fairness.ts): a scratch database migrated
// by `svc migrate`, then seeded with COPY. The same data on every run (seeded PRNGs), so
// figures from different runs and scripts describe the same rows.
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import postgres from 'postgres';
import { hashPassword } from '../../src/auth/passwords.js';
import { root } from './support.js';

const USERS = 50;

/** mulberry32: the same data on every run. */
function prng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FIRST = (
  'Ada Alan Alice Amir Anna Ben Bianca Carlos Chen Clara Dan Dana Elena Emil Eva Farah ' +
  'Felix Grace Hana Hannah Ines Ivan Jack Jana Joanna Jonas Julia Karl Kim Lena Leo Lina ' +
  'Luca Maja Marco Maria Mei Nadia Nils Nora Omar Oskar Paula Pedro Priya Rosa Ruth Sam ' +
  'Sara Sofia Tariq Theo Tom Uma Vera Victor Wen Yara Yusuf Zoe Aisha Bruno Chloe Dmitri'
).split(' ');
const SYLLABLES =
  'ka lo mi ren sto val bri den fel gor har jun kel mor nov pet quin ros tal vin wex yar zel ash'.split(
    ' ',
  );

function lastName(r: () => number): string {
  const s = () => SYLLABLES[Math.floor(r() * SYLLABLES.length)] as string;
  const text = s() + s() + s();
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** A bijection of 0..10⁹-1: every contact's number has different digits. */
function phoneDigits(i: number): string {
  return String((i * 7919 + 123457) % 1_000_000_000).padStart(9, '0');
}

function phone(i: number): { identifier: string; key: string } {
  const d = phoneDigits(i);
  switch (i % 3) {
    case 0:
      return { identifier: `+44 7${d.slice(0, 3)} ${d.slice(3)}`, key: `+447${d}` };
    case 1:
      return {
        identifier: `+1 (${d.slice(0, 3)}) ${d.slice(3, 6)}-${d.slice(6)}`,
        key: `+1${d}`,
      };
    default:
      return { identifier: `0${d.slice(0, 4)} ${d.slice(4)}`, key: `0${d}` };
  }
}

/** Text-format COPY lines in chunks of `batch` rows. */
function copyStream(count: number, line: (i: number) => string, batch = 2000): Readable {
  return Readable.from(
    (function* () {
      for (let start = 0; start < count; start += batch) {
        let chunk = '';
        const end = Math.min(count, start + batch);
        for (let i = start; i < end; i += 1) chunk += line(i);
        yield chunk;
      }
    })(),
  );
}

const N = '\\N';
const day0 = Date.UTC(2025, 0, 1);
const isoDay = (offset: number) => new Date(day0 + offset * 86_400_000).toISOString().slice(0, 10);

export interface Seeded {
  /** The one workspace every seeded row belongs to. */
  workspaceId: string;
  /** User 0 is the workspace's admin, the others members. */
  userIds: string[];
  contactIds: string[];
}

export interface SeedSize {
  contacts: number;
  /** @default contacts */
  tasks?: number;
}

/** `svc migrate` of the checkout at `svcRoot` (this one unless given) on `url`. */
export function migrate(url: string, svcRoot = root): void {
  const run = spawnSync(process.execPath, [path.join(svcRoot, 'bin/svc.js'), 'migrate'], {
    cwd: svcRoot,
    env: { PATH: process.env.PATH ?? '', SVC_DATABASE_URL: url },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (run.status !== 0) throw new Error(`svc migrate exited with ${run.status}`);
}

const LOADED_TABLES = ['contacts', 'contact_identities', 'tasks', 'contact_search'];

/**
 * One workspace, 50 users (one argon2 hash reused), `contacts` contacts with an email and
 * a phone each and `tasks` tasks over the users, loaded with COPY; the secondary indexes
 * are dropped for the load and rebuilt from their own definitions. Prints its timings.
 */
export async function seed(url: string, size: SeedSize): Promise<Seeded> {
  const { contacts, tasks = contacts } = size;
  // Replica role: no foreign-key triggers during the load (the rows are consistent by
  // construction); superuser only, as the bench database's owner is.
  const sql = postgres(url, {
    max: 4,
    onnotice: () => {},
    connection: { session_replication_role: 'replica' },
  });
  try {
    const workspaceId = randomUUID();
    await sql`insert into workspaces (id, name) values (${workspaceId}, 'Scale')`;
    const passwordHash = await hashPassword('bench password that is long enough');
    const userIds = Array.from({ length: USERS }, () => randomUUID());
    await sql`insert into users ${sql(
      userIds.map((id, i) => ({
        workspace_id: workspaceId,
        id,
        email: `user${i}@example.com`,
        name: `User ${i}`,
        password_hash: passwordHash,
        role: i === 0 ? 'admin' : 'member',
      })),
    )}`;

    // Secondary indexes (those no constraint owns) are dropped and rebuilt from their
    // own definitions, so they end exactly as the migrations made them.
    const indexes = await sql<{ indexname: string; indexdef: string }[]>`
      select indexname, indexdef from pg_indexes
      where schemaname = 'public' and tablename in ${sql(LOADED_TABLES)}
        and indexname not in (select conname from pg_constraint)
      order by indexname`;
    for (const index of indexes) await sql.unsafe(`drop index "${index.indexname}"`);

    const r = prng(42);
    const contactIds = Array.from({ length: contacts }, () => randomUUID());
    const names = contactIds.map(() => {
      const first = FIRST[Math.floor(r() * FIRST.length)] as string;
      return { first, last: lastName(r) };
    });
    const createdAt0 = Date.UTC(2023, 0, 1);

    const started = performance.now();
    const contactsCopy = async () =>
      pipeline(
        copyStream(contacts, (i) => {
          const { first, last } = names[i] as { first: string; last: string };
          const created = new Date(createdAt0 + i * 60_000).toISOString();
          return `${workspaceId}\t${contactIds[i]}\t${first} ${last}\t${created}\t${created}\n`;
        }),
        await sql`copy contacts (workspace_id, id, name, created_at, updated_at) from stdin`.writable(),
      );
    const identitiesCopy = async () => {
      const rd = prng(7);
      return pipeline(
        copyStream(contacts, (i) => {
          const { first, last } = names[i] as { first: string; last: string };
          const email = `${first}.${last}.${i}@example.com`.toLowerCase();
          const display = rd() < 0.3 ? `${first} ${last}` : N;
          const tel = phone(i);
          const phoneName = rd() < 0.1 ? `${first} (mobile)` : N;
          const contact = contactIds[i] as string;
          return (
            `${workspaceId}\t${randomUUID()}\t${contact}\temail\t${email}\t${email}\t${display}\n` +
            `${workspaceId}\t${randomUUID()}\t${contact}\tphone\t${tel.identifier}\t${tel.key}\t${phoneName}\n`
          );
        }),
        await sql`copy contact_identities (workspace_id, id, contact_id, channel, identifier, identifier_key, display_name) from stdin`.writable(),
      );
    };
    const STATUSES = [
      'open',
      'open',
      'open',
      'open',
      'open',
      'open',
      'done',
      'done',
      'done',
      'cancelled',
    ];
    const PRIORITIES = ['low', 'normal', 'normal', 'normal', 'high', 'urgent'];
    const tasksCopy = async () => {
      const rt = prng(99);
      return pipeline(
        copyStream(tasks, (i) => {
          const assignee = userIds[i % USERS] as string;
          const due = rt() < 0.1 ? N : isoDay(Math.floor(rt() * 730));
          const status = STATUSES[Math.floor(rt() * STATUSES.length)] as string;
          const priority = PRIORITIES[Math.floor(rt() * PRIORITIES.length)] as string;
          const contact = rt() < 0.4 ? (contactIds[Math.floor(rt() * contacts)] as string) : N;
          const completed = status === 'done' ? '2025-06-01 12:00:00+00' : N;
          return `${workspaceId}\t${randomUUID()}\tFollow up ${i}\t${due}\t${status}\t${priority}\t${contact}\t${assignee}\t${assignee}\t${completed}\n`;
        }),
        await sql`copy tasks (workspace_id, id, title, due_on, status, priority, contact_id, assignee_id, created_by, completed_at) from stdin`.writable(),
      );
    };
    await Promise.all([contactsCopy(), identitiesCopy(), tasksCopy()]);
    const loaded = performance.now();
    // The replica role fires no trigger, contact_search's neither: its rows as the
    // migration's backfill writes them (drizzle/0010_contact_search_sync.sql).
    await sql`insert into contact_search (workspace_id, contact_id, sort_name, names, digits)
      select c.workspace_id, c.id, lower(c.name), coalesce(i.names, ''), coalesce(i.digits, '')
      from contacts c
      left join (
        select x.workspace_id, x.contact_id,
          string_agg(lower(x.display_name), E'\n') as names,
          string_agg(nullif(x.identifier_digits, ''), E'\n') as digits
        from contact_identities x
        group by x.workspace_id, x.contact_id
      ) i on i.workspace_id = c.workspace_id and i.contact_id = c.id`;
    const copied = performance.now();
    console.log(
      `seed: COPY of ${contacts} contacts, ${2 * contacts} identities, ${tasks} tasks: ${((loaded - started) / 1000).toFixed(1)} s; their contact_search rows: ${((copied - loaded) / 1000).toFixed(1)} s`,
    );

    // Two builds at a time (two cores here); each with room to sort in memory.
    const queue = [...indexes];
    await Promise.all(
      [0, 1].map(() =>
        sql.begin(async (tx) => {
          await tx`set local maintenance_work_mem = '512MB'`;
          for (let index = queue.shift(); index; index = queue.shift()) {
            await tx.unsafe(index.indexdef);
          }
        }),
      ),
    );
    const indexed = performance.now();
    const after = await sql<{ indexname: string; indexdef: string }[]>`
      select indexname, indexdef from pg_indexes
      where schemaname = 'public' and tablename in ${sql(LOADED_TABLES)}
        and indexname not in (select conname from pg_constraint)
      order by indexname`;
    if (JSON.stringify(after) !== JSON.stringify(indexes)) {
      throw new Error('the rebuilt indexes differ from the migrations');
    }
    console.log(
      `seed: ${indexes.length} secondary indexes rebuilt (identical definitions): ${((indexed - copied) / 1000).toFixed(1)} s`,
    );

    await sql`insert into workspace_counts (workspace_id, contacts) values (${workspaceId}, ${contacts})
      on conflict (workspace_id) do update set contacts = excluded.contacts`;
    await sql.unsafe(`vacuum (analyze) ${LOADED_TABLES.join(', ')}, users, workspace_counts`);
    console.log(`seed: vacuum (analyze): ${((performance.now() - indexed) / 1000).toFixed(1)} s`);
    return { workspaceId, userIds, contactIds };
  } finally {
    await sql.end();
  }
}
