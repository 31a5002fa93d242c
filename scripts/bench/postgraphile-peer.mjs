// An optional peer column of npm run bench:scale (issue 18): PostGraphile 5 serving the bench
// database, installed outside the project's dependencies (e.g. /tmp/pgl: `npm init -y &&
// npm i postgraphile@5.1.5`), named by BENCH_POSTGRAPHILE_ROOT. Plain ESM JavaScript, so the
// project's typecheck and lint need none of PostGraphile's types. Run as its own process,
// as scale-baseline.ts is (`node scripts/bench/postgraphile-peer.mjs`, BENCH_DATABASE_URL
// set): it prints `listening <url>`, serves POST <url>/graphql and ends on SIGTERM.
//
// What it serves, and how it compares with the service and the bare baseline:
//  - PostGraphile's Amber preset over the `public` schema, grafserv's node:http adaptor,
//    NODE_ENV=production, no GraphiQL, no explain, no watch; one node-postgres pool of
//    10 connections (POOL of scale-baseline.ts) for both the token lookup and the reads.
//  - Only contacts, contact_identities, tasks and workspace_counts are exposed (smart tag
//    `@behavior -*` on every other table), read-only, and the root Query keeps only
//    allContacts, allTasks and allWorkspaceCounts (no node(id), no by-key fetchers).
//  - Authentication: the bearer token (`a1_` + base64url(workspace id, token id, secret))
//    is parsed in `grafast.context` on every request and its row held for HELD_MS, as the
//    service and the floor hold it (issue 29), with the statement of scale-baseline.ts
//    `actor()`; the secret is hashed and compared every time (src/auth/secrets.ts); a
//    failed check answers 401 before any execution.
//  - Scoping: no RLS (the bench database is not ours to alter), and no pgSettings either
//    (they would only cost a transaction and set_config per request with nothing reading
//    them). Instead the three root fields are wrapped (wrapPlans) to add
//    `workspace_id = <caller's workspace>` to their SELECT, and allTasks also
//    `assignee_id = <caller>` (the service's `tasks(date:)` is the caller's tasks). The
//    values come from the grafast context, never from the query. Nested reads follow the
//    composite (workspace_id, ...) foreign keys, so they stay in the caller's workspace.
//  - Ordering: contacts by `lower(name), id` through an added orderBy value NAME_LOWER_ASC
//    (addPgTableOrderBy), so the first page uses contacts_name_idx as the service does.
//    PgIndexBehaviorsPlugin is disabled so identities can be ordered by CREATED_AT_ASC
//    (unindexed), as the service orders them (created_at, id).
//  - The contact page total reads workspace_counts.contacts (allWorkspaceCounts, a second
//    root field of the same document) rather than totalCount, which would count the rows.
//    PostGraphile renders bigint as a string ("1000000").
//  - `{ version }` has no PostGraphile counterpart; POSTGRAPHILE_QUERIES.version is
//    `{ __typename }`: the token lookup and the HTTP/GraphQL overhead, no table read.
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
// The service's own token parsing (this file runs under tsx, as scale.ts spawns it).
import { parseSecret, secretMatches } from '../../src/auth/secrets.js';
import { HELD_MS } from '../../src/auth/credential-cache.js';

/** The service's pool (createDatabase's default); PostGraphile gets the same. */
export const POOL = 10;
const PAGE = 50;

// ---------------------------------------------------------------------------- documents

const IDENTITIES = `identities: contactIdentitiesByWorkspaceIdAndContactId(orderBy: [CREATED_AT_ASC, ROW_ID_ASC]) { nodes { channel identifier } }`;
const TASK_FIELDS = 'id: rowId title dueOn status';

/**
 * The GraphQL documents equivalent to scale.ts `queries`, by scenario field: each takes
 * the scenario's variables and returns the body to POST to <url>/graphql.
 */
export const POSTGRAPHILE_QUERIES = {
  /** `contactPage` unfiltered: the first 50 by lower(name), id, and the workspace total. */
  contactPage: () => ({
    query: `query ContactPage {
  total: allWorkspaceCounts { nodes { contacts } }
  contactPage: allContacts(first: ${PAGE}, orderBy: [NAME_LOWER_ASC, ROW_ID_ASC]) {
    nodes { id: rowId name ${IDENTITIES} }
  }
}`,
    variables: {},
  }),
  /** `tasks(date:)`: the caller's open tasks due that day, 50 and whether there are more. */
  tasks: (variables) => ({
    query: `query Tasks($date: Date!) {
  tasks: allTasks(first: ${PAGE}, condition: { dueOn: $date, status: "open" }, orderBy: [DUE_ON_ASC, ROW_ID_ASC]) {
    edges { cursor node { ${TASK_FIELDS} } }
    pageInfo { hasNextPage endCursor }
  }
}`,
    variables: { date: variables.date },
  }),
  /** `contact(id)` with its identities and its first 50 open tasks by due_on, id. */
  contact: (variables) => ({
    query: `query Contact($id: UUID!) {
  contact: allContacts(condition: { rowId: $id }) {
    nodes {
      id: rowId name ${IDENTITIES}
      tasks: tasksByWorkspaceIdAndContactId(first: ${PAGE}, condition: { status: "open" }, orderBy: [DUE_ON_ASC, ROW_ID_ASC]) {
        nodes { ${TASK_FIELDS} }
      }
    }
  }
}`,
    variables: { id: variables.id },
  }),
  /** `tasks(date:)` with each task's contact name (null for a task without a contact). */
  tasksWithContact: (variables) => ({
    query: `query Tasks($date: Date!) {
  tasks: allTasks(first: ${PAGE}, condition: { dueOn: $date, status: "open" }, orderBy: [DUE_ON_ASC, ROW_ID_ASC]) {
    edges { cursor node { ${TASK_FIELDS} contact: contactByWorkspaceIdAndContactId { name } } }
    pageInfo { hasNextPage endCursor }
  }
}`,
    variables: { date: variables.date },
  }),
  /** No `version` field in PostGraphile: the token lookup and an empty execution. */
  version: () => ({ query: '{ __typename }', variables: {} }),
};

// ---------------------------------------------------------------------------- tokens

/** The statement of scale-baseline.ts `actor()` (src/auth/credentials.ts). */
const ACTOR = `select t.secret_hash, t.name, t.scopes, t.last_used_at, u.id as user_id, u.role
  from api_tokens t
  join users u on u.workspace_id = t.workspace_id and u.id = t.user_id
  join workspaces w on w.id = t.workspace_id
  where t.workspace_id = $1 and t.id = $2 and t.revoked_at is null
    and (t.expires_at is null or t.expires_at > now()) and u.disabled_at is null
    and w.deactivated_at is null`;

function unauthorized() {
  return Object.assign(new Error('Unauthorized'), { statusCode: 401 });
}

// ---------------------------------------------------------------------------- server

/** Tables the documents read; every other table of `public` is left out of the schema. */
const TABLES = new Set(['contacts', 'contact_identities', 'tasks', 'workspace_counts']);
/** Root fields kept, each scoped to the caller by `scopedRoots`. */
const ROOTS = new Set(['allContacts', 'allTasks', 'allWorkspaceCounts']);

async function load(root) {
  const require = createRequire(path.join(root, 'package.json'));
  const from = (specifier) => import(pathToFileURL(require.resolve(specifier)).href);
  const [core, amber, adaptor, grafservNode, utils, pgModule] = await Promise.all([
    from('postgraphile'),
    from('postgraphile/presets/amber'),
    from('postgraphile/adaptors/pg'),
    from('postgraphile/grafserv/node'),
    from('postgraphile/utils'),
    // node-postgres as PostGraphile resolves it (its dependency).
    import(pathToFileURL(createRequire(require.resolve('postgraphile')).resolve('pg')).href),
  ]);
  return {
    postgraphile: core.postgraphile ?? core.default.postgraphile,
    PostGraphileAmberPreset: amber.PostGraphileAmberPreset ?? amber.default,
    makePgService: adaptor.makePgService,
    grafserv: grafservNode.grafserv,
    utils,
    Pool: (pgModule.default ?? pgModule).Pool,
  };
}

export async function postgraphileServer(databaseUrl, root) {
  const { postgraphile, PostGraphileAmberPreset, makePgService, grafserv, utils, Pool } =
    await load(root);
  const { addPgTableOrderBy, orderByAscDesc, pgSmartTags, wrapPlans } = utils;

  const pool = new Pool({ connectionString: databaseUrl, max: POOL });

  /** Token rows read lately, held for HELD_MS as the service and the floor hold them. */
  const held = new Map();

  async function actor(authorization) {
    const parsed = parseSecret('a1_', (authorization ?? '').slice(7));
    if (!parsed) return null;
    const key = `${parsed.workspaceId}:${parsed.id}`;
    let entry = held.get(key);
    if (!entry || entry.until <= Date.now()) {
      const { rows } = await pool.query({
        name: 'bench_actor',
        text: ACTOR,
        values: [parsed.workspaceId, parsed.id],
      });
      const row = rows[0];
      if (!row) return null;
      entry = { secretHash: row.secret_hash, userId: row.user_id, until: Date.now() + HELD_MS };
      held.set(key, entry);
    }
    // The presented secret is hashed and compared on every request.
    if (!secretMatches(entry.secretHash, parsed.secret)) return null;
    return { workspaceId: parsed.workspaceId, userId: entry.userId };
  }

  /** Only the four tables, read-only. */
  const onlyBenchTables = pgSmartTags(
    [
      {
        kind: 'class',
        match: (table) => !TABLES.has(table.relname),
        tags: { behavior: '-*' },
      },
      {
        kind: 'class',
        match: (table) => TABLES.has(table.relname),
        tags: { behavior: ['-insert', '-update', '-delete'] },
      },
    ],
    null,
    { name: 'BenchTablesPlugin' },
  );

  /** `lower(name)` as an order of contacts: the service's order, on contacts_name_idx. */
  const contactsByLowerName = addPgTableOrderBy(
    { schemaName: 'public', tableName: 'contacts' },
    (build) => {
      const { sql } = build;
      const { TYPES } = build.dataplanPg;
      return orderByAscDesc('NAME_LOWER', (queryBuilder) => ({
        fragment: sql`lower(${queryBuilder.alias}.name)`,
        codec: TYPES.text,
      }));
    },
  );

  /** The root Query keeps only the scoped connections. */
  const onlyScopedRoots = {
    name: 'BenchRootFieldsPlugin',
    version: '0.0.0',
    schema: {
      hooks: {
        GraphQLObjectType_fields(fields, _build, context) {
          if (!context.scope.isRootQuery) return fields;
          return Object.fromEntries(Object.entries(fields).filter(([name]) => ROOTS.has(name)));
        },
      },
    },
  };

  /** The caller's workspace (and, for tasks, the caller) on each root SELECT. */
  const scopedRoots = wrapPlans((build) => {
    const { sql } = build;
    const { TYPES } = build.dataplanPg;
    const { context } = build.grafast;
    const scoped =
      (...columns) =>
      (plan) => {
        const $connection = plan();
        const $select = $connection.getSubplan();
        const $context = context();
        for (const [column, key] of columns) {
          $select.where(
            sql`${$select.alias}.${sql.identifier(column)} = ${$select.placeholder($context.get(key), TYPES.uuid)}`,
          );
        }
        return $connection;
      };
    const workspace = ['workspace_id', 'benchWorkspaceId'];
    return {
      Query: {
        allContacts: scoped(workspace),
        allWorkspaceCounts: scoped(workspace),
        allTasks: scoped(workspace, ['assignee_id', 'benchUserId']),
      },
    };
  });

  const preset = {
    extends: [PostGraphileAmberPreset],
    plugins: [onlyBenchTables, contactsByLowerName, onlyScopedRoots, scopedRoots],
    disablePlugins: ['PgIndexBehaviorsPlugin', 'NodePlugin'],
    pgServices: [makePgService({ pool, schemas: ['public'], pubsub: false })],
    grafserv: {
      graphqlPath: '/graphql',
      graphiql: false,
      graphiqlOnGraphQLGET: false,
      watch: false,
    },
    grafast: {
      explain: false,
      async context(requestContext) {
        const who = await actor(requestContext.node?.req?.headers.authorization);
        if (!who) throw unauthorized();
        return { benchWorkspaceId: who.workspaceId, benchUserId: who.userId };
      },
    },
  };

  const pgl = postgraphile(preset);
  const serv = pgl.createServ(grafserv);
  const server = createServer();
  await serv.addTo(server);
  await serv.ready?.();
  await pgl.getSchema();
  // Port 0: a free loopback port, chosen by the system.
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    url: `http://127.0.0.1:${address.port}`,
    close: async () => {
      const closed = new Promise((resolve) => server.close(resolve));
      server.closeAllConnections();
      await closed;
      await pgl.release();
      await pool.end();
    },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.env.NODE_ENV = 'production';
  process.env.GRAPHILE_ENV ??= 'production';
  const url = process.env.BENCH_DATABASE_URL;
  const root = process.env.BENCH_POSTGRAPHILE_ROOT;
  if (!url) throw new Error('BENCH_DATABASE_URL names the database to serve');
  if (!root) throw new Error('BENCH_POSTGRAPHILE_ROOT names the directory PostGraphile is in');
  const server = await postgraphileServer(url, root);
  console.log(`listening ${server.url}`);
  process.once('SIGTERM', () => void server.close().then(() => process.exit(0)));
}
