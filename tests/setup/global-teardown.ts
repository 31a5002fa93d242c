// Stops the embedded PostgreSQL the global setup started, if it started one.
export default async function globalTeardown(): Promise<void> {
  const stop = (globalThis as { __svcStopEmbedded?: () => Promise<void> }).__svcStopEmbedded;
  await stop?.();
}
