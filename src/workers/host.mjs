// The entry of a worker process (src/workers/run.ts starts it). Everything crossing between
// the two is a frame: a 4-byte big-endian length, then that many bytes of a v8-serialized
// value. It reads one frame from stdin, `{ file, input, batches, attach }` (with `attach`,
// then `attach.bytes` raw bytes, set as `input[attach.key]`), and runs `file`'s default
// export on the input. Without `batches` it writes the answer to fd 3 as one frame.
// With `batches` the export answers an iterator (a generator, sync or async): each time the
// parent asks, with one byte on stdin, the next value is taken from it and written as one
// frame, and once it is done an empty frame; nothing is written unasked, so the parent
// holds at most one batch. Nothing else reaches the parent: stdout is discarded, and the
// parent keeps only the start of stderr (a fatal error's first lines). Plain JavaScript, so
// the process needs no loader.
import { createWriteStream } from 'node:fs';
import { deserialize, serialize } from 'node:v8';

const stdin = process.stdin[Symbol.asyncIterator]();
let pending = Buffer.alloc(0);

/** The next `bytes` bytes of stdin, or null once the parent closed it. */
async function take(bytes) {
  // Chunks gathered and joined once: a file of megabytes comes in many.
  const chunks = [pending];
  let held = pending.length;
  while (held < bytes) {
    const { value, done } = await stdin.next();
    if (done) return null;
    chunks.push(value);
    held += value.length;
  }
  const all = chunks.length === 1 ? pending : Buffer.concat(chunks, held);
  const taken = all.subarray(0, bytes);
  pending = all.subarray(bytes);
  return taken;
}

const out = createWriteStream('', { fd: 3 });

/** Writes `body` as one frame; resolves once it is handed to the pipe. */
function send(body) {
  const head = Buffer.alloc(4);
  head.writeUInt32BE(body.length);
  return new Promise((resolve, reject) => {
    out.write(head);
    out.write(body, (error) => (error ? reject(error) : resolve()));
  });
}

const length = await take(4);
if (!length) process.exit(0);
const { file, input, batches, attach } = deserialize(await take(length.readUInt32BE(0)));
// Bytes the parent streams after the first frame, raw (a file it never copied whole).
if (attach) {
  const bytes = await take(attach.bytes);
  if (!bytes) process.exit(0);
  input[attach.key] = bytes;
}

const work = (await import(file)).default;
if (typeof work !== 'function') throw new TypeError(`${file} has no default export to run`);
if (!batches) {
  await send(serialize(await work(input)));
} else {
  const answers = await work(input);
  const iterator = answers?.[Symbol.asyncIterator]?.() ?? answers?.[Symbol.iterator]?.();
  if (!iterator) throw new TypeError(`${file} answered no iterator of batches`);
  for (;;) {
    // The parent asks for each batch; once it closes stdin, it wants no more.
    if (!(await take(1))) process.exit(0);
    const { value, done } = await iterator.next();
    if (done) break;
    await send(serialize(value));
  }
  await send(Buffer.alloc(0));
}
out.end(() => process.exit(0));
