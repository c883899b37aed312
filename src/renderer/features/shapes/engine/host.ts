import { toRecording } from '../../../../shared/doctor-recording'
import type { OnErrorResult, ShapeStreamError } from '../../../../shared/shape-client'
import { WorkbenchEngine, type EngineOptions } from './engine'
import type {
  Ask,
  EngineConfig,
  FromEngine,
  Port,
  Summary,
  ToEngine,
  ViewData,
  ViewQuery,
  WireOnErrorResult
} from './protocol'
import { ViewBuilder } from './views'
import { errorFromWire, errorToWire, recordFromWire, stateToWire } from './wire'

/** Updates go to the page at most this often (and only once it has taken the last one). */
const UPDATE_EVERY_MS = 50

/**
 * The worker's side: runs a WorkbenchEngine for the page and sends it, at most every UPDATE_EVERY_MS and only after
 * the page acknowledged the previous one, a summary and the windows of the views it shows. A page that falls behind
 * thus gets fewer, fresher updates instead of a queue.
 */
export class EngineHost {
  private engine: WorkbenchEngine | null = null
  private builder: ViewBuilder | null = null
  private views = new Map<string, ViewQuery>()
  private dirty = true
  private unacknowledged = false
  private timer: ReturnType<typeof setTimeout> | null = null
  private readonly pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>()
  private nextCall = 1

  constructor(
    private readonly port: Port,
    private readonly fetchImpl?: typeof fetch
  ) {
    port.onmessage = (event) => this.receive(event.data as ToEngine)
  }

  private post(message: FromEngine): void {
    this.port.postMessage(message)
  }

  private receive(message: ToEngine): void {
    switch (message.type) {
      case 'start':
        return this.start(message.config)
      case 'stop':
        return this.engine?.stop()
      case 'note':
        return this.engine?.recorder.note('info', message.text)
      case 'views':
        this.views = new Map(Object.entries(message.views))
        this.builder?.retain(this.views.keys())
        return this.changed(0)
      case 'ack':
        this.unacknowledged = false
        return this.changed()
      case 'ask':
        return void this.answer(message.id, message.ask)
      case 'answer': {
        const call = this.pending.get(message.id)
        this.pending.delete(message.id)
        if (message.error) call?.reject(errorFromWire(message.error))
        else call?.resolve(message.value)
      }
    }
  }

  /** Asks the page to run one of its functions. */
  private call<T>(call: Extract<FromEngine, { type: 'remote' }>['call']): Promise<T> {
    const id = this.nextCall++
    this.post({ type: 'remote', id, call })
    return new Promise<T>((resolve, reject) =>
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject })
    )
  }

  private start(config: EngineConfig): void {
    const remote = (id: number) => this.call<string | undefined>({ kind: 'resolve', remote: id })
    const options: EngineOptions = {
      url: config.url,
      definition: config.definition,
      headers: recordFromWire(config.headers, remote),
      params: config.params,
      live: config.live,
      offset: config.offset,
      clients: config.clients,
      commitTimes: config.commitTimes,
      fetch: this.fetchImpl,
      onError: config.onError
        ? async (error: ShapeStreamError): Promise<OnErrorResult> => {
            const answer = await this.call<WireOnErrorResult>({ kind: 'onError', error: errorToWire(error) })
            if (!answer) return undefined
            return {
              ...(answer.headers ? { headers: recordFromWire(answer.headers, remote) } : {}),
              ...(answer.params ? { params: recordFromWire(answer.params, remote) } : {})
            }
          }
        : undefined
    }
    const engine = new WorkbenchEngine(options)
    for (const text of config.notes) engine.recorder.note('info', text)
    this.engine = engine
    this.builder = new ViewBuilder(engine)
    engine.onChange(() => this.changed())
    engine.start()
    this.changed(0)
  }

  private async answer(id: number, ask: Ask): Promise<void> {
    const engine = this.engine
    try {
      if (!engine) throw new Error('the session has not started')
      let value: unknown = null
      if (ask.kind === 'drop') await engine.drop()
      else if (ask.kind === 'subset') value = await engine.requestSnapshot(ask.subset, ask.method)
      else value = toRecording(engine.recorders)
      this.post({ type: 'answer', id, value })
    } catch (error) {
      this.post({ type: 'answer', id, error: errorToWire(error) })
    }
  }

  private changed(delay = UPDATE_EVERY_MS): void {
    this.dirty = true
    if (this.unacknowledged || this.timer || !this.engine) return
    this.timer = setTimeout(() => {
      this.timer = null
      this.flush()
    }, delay)
  }

  private flush(): void {
    const engine = this.engine
    const builder = this.builder
    if (!engine || !builder || !this.dirty) return
    this.dirty = false
    const views: Record<string, ViewData> = {}
    for (const [id, query] of this.views) {
      const data = builder.build(id, query)
      if (data) views[id] = data
    }
    const summary: Summary = {
      state: stateToWire(engine.stream.current),
      counts: { ...engine.counts },
      rowCount: engine.rows.size,
      protocolParams: engine.stream.protocolParams(),
      requests: engine.recorders.reduce((sum, recorder) => sum + recorder.exchanges.length, 0),
      rate: engine.rate
    }
    this.unacknowledged = true
    this.post({ type: 'update', summary, views })
  }
}
