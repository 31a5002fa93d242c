// The entry of a worker process (src/workers/run.ts starts it): reads its module's URL and
// input from stdin (v8-serialized), runs the module's default export on the input and
// writes the answer, v8-serialized, to fd 3. Nothing else reaches the parent: stdout is
// discarded, and the parent keeps only the start of stderr (a fatal error's first lines).
// Plain JavaScript, so the process needs no loader.
import { createWriteStream } from 'node:fs';
import { deserialize, serialize } from 'node:v8';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const { file, input } = deserialize(Buffer.concat(chunks));
chunks.length = 0;

const work = (await import(file)).default;
if (typeof work !== 'function') throw new TypeError(`${file} has no default export to run`);
const answer = serialize(await work(input));
const out = createWriteStream('', { fd: 3 });
out.end(answer, () => process.exit(0));
