import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/*
 * The layers of src and what each may import (docs/architecture.md, "Layers"). Higher layers may import lower ones,
 * never the reverse. Each rule is a pattern on the relative import path of a module of a higher layer.
 */
const UP = '^(\\.\\.?/)+';
const forbid = {
  entry: {
    regex: `${UP}(main\\.js$|cli/)`,
    message: 'Only the entry points (src/main.ts, src/cli) import the entry points.',
  },
  http: {
    regex: `${UP}(http/|widget/routes\\.js$)`,
    message:
      'Nothing below the HTTP layer imports from it: throw a command error (src/commands/errors.ts) and let src/http translate it; take schemas from src/schemas and AppServices from src/bootstrap.ts.',
  },
  bootstrapValues: {
    regex: `${UP}bootstrap\\.js$`,
    allowTypeImports: true,
    message:
      'Below the entry points and the HTTP layer, the composition root is named as a type only (import type { AppServices }).',
  },
  application: {
    regex: `${UP}(commands|subscribers)/`,
    message: 'Commands and subscribers call the layers below them, never the reverse.',
  },
  io: {
    regex: `${UP}(storage|projections|subscribers|webhooks)/|^(pg|fastify|ioredis)$`,
    message: 'The domain is pure: decide/evolve functions without I/O.',
  },
  // The domain reads only itself, src/shared and the event types: one regex per depth of the importing file.
  outsideDomainFromRoot: {
    regex: '^\\.\\./(?!shared/|events/types\\.js$)',
    message: 'src/domain imports only src/domain, src/shared and src/events/types.ts.',
  },
  outsideDomainFromAggregate: {
    regex: '^\\.\\./\\.\\./(?!shared/|events/types\\.js$)',
    message: 'src/domain imports only src/domain, src/shared and src/events/types.ts.',
  },
};
const layer = (files, ignores, patterns) => ({
  files,
  ignores,
  rules: { 'no-restricted-imports': ['error', { patterns }] },
});
const HTTP = ['src/http/**', 'src/widget/routes.ts', 'src/console/**'];
const APPLICATION = ['src/commands/**', 'src/subscribers/**'];
const ENTRY = ['src/main.ts', 'src/cli/**'];
const layers = [
  layer(HTTP, [], [forbid.entry]),
  layer(['src/bootstrap.ts'], [], [forbid.entry, forbid.http]),
  layer(APPLICATION, [], [forbid.entry, forbid.http, forbid.bootstrapValues]),
  layer(['src/domain/*.ts'], [], [forbid.io, forbid.outsideDomainFromRoot]),
  layer(['src/domain/*/**'], [], [forbid.io, forbid.outsideDomainFromAggregate]),
  layer(
    ['src/**/*.ts'],
    [...ENTRY, ...HTTP, ...APPLICATION, 'src/bootstrap.ts', 'src/domain/**'],
    [forbid.entry, forbid.http, forbid.bootstrapValues, forbid.application],
  ),
];

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'data/', '.tap/', 'coverage/', 'src/widget/public/vendor/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  ...layers,
  {
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        URL: 'readonly',
        Buffer: 'readonly',
        setTimeout: 'readonly',
      },
    },
  },
);
