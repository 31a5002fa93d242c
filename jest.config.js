/** @type {import('jest').Config} */
export default {
  testEnvironment: 'node',
  roots: ['<rootDir>/tests'],
  testMatch: ['**/*.test.ts'],
  extensionsToTreatAsEsm: ['.ts'],
  // ts-jest transpiles each file on its own (tsconfig isolatedModules); `npm run typecheck` checks
  // types. It has no native binding, so the lockfile installs with `npm ci` anywhere.
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true }],
  },
  // Sources import siblings as `./x.js` (NodeNext); jest resolves the `.ts` file.
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  globalSetup: '<rootDir>/tests/setup/global-setup.ts',
  globalTeardown: '<rootDir>/tests/setup/global-teardown.ts',
  testTimeout: 30000,
};
