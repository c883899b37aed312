// An ESLint rule: a test file under src/ is an error (`syncscope/tests-outside-src`). vitest only runs test/**, so a
// test left beside the code would never run; it belongs in test/<room>/ (see docs/architecture.md, "Tests").
import { relative, sep } from 'node:path'

export const testsOutsideSrc = {
  meta: {
    type: 'problem',
    docs: { description: 'tests live in test/<room>/, never under src/' },
    schema: [],
    messages: {
      misplaced:
        '{{file}} is a test under src/, where vitest never runs it: move it to test/<room>/ (docs/architecture.md, "Tests")'
    }
  },
  create(context) {
    return {
      Program: (node) =>
        context.report({
          node,
          messageId: 'misplaced',
          data: { file: relative(context.cwd, context.filename).split(sep).join('/') }
        })
    }
  }
}
