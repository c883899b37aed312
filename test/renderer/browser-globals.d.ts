// The browser global the renderer modules under test use (session.ts batches re-renders per frame); each test that
// needs it stubs it. Declared for this folder's program only (tsconfig.renderer-tests.json), not for src/main's.
declare function requestAnimationFrame(callback: (time: number) => void): number
