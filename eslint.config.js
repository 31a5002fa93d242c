import tseslint from 'typescript-eslint';
import nodePlugin from 'eslint-plugin-n';

export default tseslint.config(
  {
    ignores: ['node_modules/**', 'drizzle/**', 'plugins/*/drizzle/**', '.data/**', 'coverage/**'],
  },
  ...tseslint.configs.recommended,
  {
    plugins: { n: nodePlugin },
    rules: {
      // Configuration is parsed once, in src/config.ts, and passed down.
      'n/no-process-env': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'error',
    },
  },
  {
    files: [
      'src/config.ts',
      'src/config/**',
      'scripts/**',
      'tests/**',
      'drizzle.config.ts',
      'plugins/*/drizzle.config.ts',
      'jest.config.js',
    ],
    rules: { 'n/no-process-env': 'off' },
  },
  {
    files: ['scripts/**', 'src/cli/**', 'bin/**'],
    rules: { 'no-console': 'off' },
  },
  {
    // Plugins see the core only through its SDK.
    files: ['plugins/**/*.ts'],
    ignores: ['plugins/*/drizzle.config.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./)+src/(?!plugin-sdk/)',
              message: 'Plugins import the core only through src/plugin-sdk.',
            },
            {
              // Outbound HTTP goes through the SDK's fetchOutbound (address rules, redirects,
              // credentials, time and size bounds); docs/plugins.md.
              regex: '^(node:)?(http|https|http2|net|tls|dgram)$|^undici$',
              message: 'Plugins reach other hosts only through fetchOutbound from the SDK.',
            },
          ],
        },
      ],
      'no-restricted-globals': [
        'error',
        {
          name: 'fetch',
          message: 'Plugins reach other hosts only through fetchOutbound from the SDK.',
        },
      ],
    },
  },
);
