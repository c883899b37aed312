// The part of the WebAssembly JS API the main process uses (Node has it; @types/node 20 does not declare it).
declare namespace WebAssembly {
  class Module {
    constructor(bytes: Uint8Array)
  }
  class Instance {
    constructor(module: Module, imports: object)
    readonly exports: Record<string, unknown>
  }
  interface Memory {
    readonly buffer: ArrayBuffer
    grow(pages: number): number
  }
}
