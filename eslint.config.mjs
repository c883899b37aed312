import js from '@eslint/js'
import tseslint from 'typescript-eslint'
import reactHooks from 'eslint-plugin-react-hooks'
import globals from 'globals'
import { roomImports } from './scripts/eslint-room-imports.mjs'
import { testsOutsideSrc } from './scripts/eslint-tests-outside-src.mjs'

const electronOnlyInShell = {
  name: 'electron',
  message: 'Only src/main/index.ts and src/main/electron/ know Electron.'
}
/** The project's own rules (scripts/eslint-*.mjs). */
const syncscope = { rules: { 'room-imports': roomImports, 'tests-outside-src': testsOutsideSrc } }
const sqlInternals = {
  regex: '^(\\.\\./)+(src/main/)?sql/(?!index$)',
  message: 'Import the SQL toolkit from src/main/sql (its index), not its inner files.'
}

export default tseslint.config(
  { ignores: ['out/**', 'node_modules/**', 'test-results/**', 'playwright-report/**', 'bin/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  { files: ['scripts/**/*.mjs', 'bench/**/*.mjs', '*.mjs'], languageOptions: { globals: globals.node } },
  {
    files: ['**/*.{ts,tsx}'],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      'no-console': 'off'
    }
  },
  {
    files: ['src/renderer/**/*.tsx', 'src/renderer/**/*.ts'],
    plugins: { 'react-hooks': reactHooks },
    rules: { 'react-hooks/rules-of-hooks': 'error', 'react-hooks/exhaustive-deps': 'warn' }
  },
  // each block below sets no-restricted-imports whole (a later block replaces an earlier one's options)
  {
    files: ['test/**/*.ts', 'bench/**/*.ts', 'e2e/**/*.ts'],
    // the SQL toolkit's own tests (test/sql/) read its inner files
    ignores: ['test/sql/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: [sqlInternals] }] }
  },
  {
    // one test layout: unit and integration tests in test/<room>/, Playwright's in e2e/
    files: ['src/**/*.test.{ts,tsx}', 'src/**/*.spec.{ts,tsx}'],
    plugins: { syncscope },
    rules: { 'syncscope/tests-outside-src': 'error' }
  },
  {
    files: ['src/main/**/*.ts'],
    ignores: ['src/main/index.ts', 'src/main/electron/**', 'src/main/sql/**'],
    rules: { 'no-restricted-imports': ['error', { paths: [electronOnlyInShell], patterns: [sqlInternals] }] }
  },
  { files: ['src/main/sql/**/*.ts'], rules: { 'no-restricted-imports': ['error', { paths: [electronOnlyInShell] }] } },
  {
    files: ['src/main/**/*.ts'],
    plugins: { syncscope },
    rules: { 'syncscope/room-imports': 'error' }
  },
  {
    files: ['src/renderer/**/*.{ts,tsx}'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['node:*'], message: 'The renderer runs in a browser.' },
            {
              regex: '^(\\.\\./)+main(/|$)',
              message:
                'The renderer never imports src/main: it reaches main through the contract (src/shared/contract).'
            }
          ]
        }
      ]
    }
  },
  {
    files: ['src/shared/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['node:*'], message: 'Shared code runs in the browser too.' },
            {
              regex: '^(\\.\\./)+(main|renderer)(/|$)',
              message: 'src/shared never imports src/main or src/renderer: both import it.'
            }
          ]
        }
      ]
    }
  }
)
