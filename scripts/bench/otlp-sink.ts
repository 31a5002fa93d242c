// A collector's OTLP/HTTP endpoint that keeps nothing, for `npm run bench` with tracing on:
//   tsx scripts/bench/otlp-sink.ts &   # prints its URL
//   OTEL_EXPORTER_OTLP_ENDPOINT=<url> BENCH_ONLY=graph npm run bench
// It answers every export 200 and counts the spans it was sent (printed on SIGTERM).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

let spans = 0;
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const text = Buffer.concat(chunks).toString('utf8');
    spans += text.split('"spanId"').length - 1;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
server.listen(Number(process.env.SINK_PORT ?? 0), '127.0.0.1', () => {
  console.log(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
process.once('SIGTERM', () => {
  console.log(`spans received: ${spans}`);
  server.close(() => process.exit(0));
});
