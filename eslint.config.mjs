// ESLint for the whole repository (npm run lint, and test/lint.test.ts in npm test): eslint's recommended rules and
// typescript-eslint's recommended rules, configured once. Formatting is Prettier's (.prettierrc.json), not ESLint's.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'out/', 'test-results/', '**/*.vsix', 'engines/torch/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2023, sourceType: 'module', globals: { ...globals.node } },
    rules: {
      // `_name`: deliberately unused (an express error handler's next, a destructured field left out).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
    },
  },
  { files: ['webview/**'], languageOptions: { globals: { ...globals.browser } } },
  // A production function reads in one screen: 80 lines as written, from its first line to its last, blank lines,
  // comments and the functions nested in it included (what a reader scrolls through); the benchmarks too, which are
  // read to know what a figure measures. The torch engine's Python is held to the same by test/engine/python.test.ts.
  {
    files: ['daemon/**', 'extension/**', 'webview/**', 'sdk/**', 'client/**', 'protocol/**', 'bench/**'],
    rules: { 'max-lines-per-function': ['error', { max: 80, skipBlankLines: false, skipComments: false, IIFEs: true }] },
  },
  // Tests read arbitrary JSON answers (problem bodies, fuzzed inputs): `any` is what they are.
  { files: ['test/**'], rules: { '@typescript-eslint/no-explicit-any': 'off' } },
);
