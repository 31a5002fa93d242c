// npm run bench: the service against a bare node:http handler in the same run.
//  - `{ version }` requests per second and latency, against a node:http handler that
//    answers the same JSON (the ceiling of any Node server on this machine);
//  - the time from `svc serve` to ready with migrations current, on an empty database
//    (every migration applied) and on a migrated one.
import { createServer } from 'node:http';
import { freePort, load, report, scratchDatabase, startServe } from './support.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 8);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);

async function baselineServer(body: string) {
  const port = await freePort();
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
      });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(r)) };
}

const db = await scratchDatabase();
try {
  const cold = await startServe({ SVC_DATABASE_URL: db.url });
  await cold.stop();
  const service = await startServe({ SVC_DATABASE_URL: db.url });
  const versionBody = JSON.stringify({ query: '{ version }' });
  const answer = await (
    await fetch(`${service.url}/api/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: versionBody,
    })
  ).text();
  const baseline = await baselineServer(answer);

  console.log(
    `svc serve to ready: ${cold.readyMs.toFixed(0)} ms on an empty database (all migrations), ${service.readyMs.toFixed(0)} ms with migrations current`,
  );
  console.log(
    `load: ${connections} connections, ${seconds} s each, one machine (load generator shares the cores)\n`,
  );
  const base = await load('baseline node:http, same JSON', {
    url: baseline.url,
    body: versionBody,
    connections,
    seconds,
  });
  const version = await load('svc { version }', {
    url: `${service.url}/api/graphql`,
    body: versionBody,
    connections,
    seconds,
  });
  report([base, version], base);
  await baseline.close();
  await service.stop();
} finally {
  await db.drop();
}
