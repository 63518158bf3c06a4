// ESLint's configuration for the repository's JavaScript: the k6 scripts (ES modules run by
// k6's goja runtime: k6's globals, no Node or browser) and tests/k6. Run from the repository
// root by tests/test_lint.py: lint/node_modules/.bin/eslint --config lint/eslint.config.mjs k6 tests/k6
import js from '@eslint/js';

// what k6 itself defines in a script's scope (https://grafana.com/docs/k6/latest/javascript-api/init-context/)
const k6Globals = {
  __ENV: 'readonly', __VU: 'readonly', __ITER: 'readonly', open: 'readonly', require: 'readonly', console: 'readonly',
  setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly',
};

export default [
  // k6/oltp.js and k6/tpcc.js are generated (scripts/bundle) from k6/src/ and k6/lib/, which are linted
  { ignores: ['k6/oltp.js', 'k6/tpcc.js'] },
  js.configs.recommended,
  {
    files: ['**/*.js'],
    languageOptions: { ecmaVersion: 2022, sourceType: 'module', globals: k6Globals },
    rules: {
      'no-unused-vars': ['error', { args: 'after-used', argsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
];
