/**
 * The workbench's page for bench/workbench-scale.ts, driven over the DevTools protocol with only what the bench needs
 * (Runtime.evaluate, a screenshot, the profiler when asked). Not a Playwright page: Playwright enables the Network
 * domain in each page and in each of its workers, and Chromium's network agent then keeps a copy of every response
 * body in the renderer (up to 200 MB, for Network.getResponseBody). Measured at a million rows: ~190 MiB of the
 * renderer's growth was that copy, which the page itself never makes. This page lives in a browser context created
 * here, which Playwright leaves alone, and nothing attaches to its worker until the bench's `--profile` report.
 */
import { writeFile } from 'node:fs/promises'
import type { Browser, CDPSession } from 'playwright-core'

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms))

/** How a session's messages travel: through the browser's session, or nested in its parent target's. */
interface Transport {
  post(message: string): void
  listen(listener: (message: string) => void): void
}

/** A target (the page, its worker) spoken to in messages wrapped by its parent (`Target.sendMessageToTarget`). */
export class TargetSession {
  private next = 1
  private readonly waiting = new Map<number, { done(result: unknown): void; fail(error: Error): void }>()
  private readonly listeners = new Map<string, Array<(params: Record<string, unknown>) => void>>()

  private constructor(private readonly transport: Transport) {
    transport.listen((text) => {
      const message = JSON.parse(text) as {
        id?: number
        result?: unknown
        error?: { message: string }
        method?: string
        params?: Record<string, unknown>
      }
      if (message.method)
        for (const listener of this.listeners.get(message.method) ?? []) listener(message.params ?? {})
      const call = message.id === undefined ? undefined : this.waiting.get(message.id)
      if (!call || message.id === undefined) return
      this.waiting.delete(message.id)
      if (message.error) call.fail(new Error(message.error.message))
      else call.done(message.result)
    })
  }

  /** A page, attached from the browser's session. */
  static async attach(browser: CDPSession, targetId: string): Promise<TargetSession> {
    const { sessionId } = await browser.send('Target.attachToTarget', { targetId, flatten: false })
    return new TargetSession({
      post: (message) => void browser.send('Target.sendMessageToTarget', { sessionId, message }),
      listen: (listener) =>
        browser.on('Target.receivedMessageFromTarget', (event) => {
          if (event.sessionId === sessionId) listener(event.message)
        })
    })
  }

  /** The first worker of this target (a dedicated worker answers only a session nested in its page's). */
  async worker(): Promise<TargetSession> {
    const attached = new Promise<string>((done) =>
      this.on('Target.attachedToTarget', (params) => {
        if ((params.targetInfo as { type: string }).type === 'worker') done(params.sessionId as string)
      })
    )
    await this.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: false, flatten: false })
    const sessionId = await attached
    return new TargetSession({
      post: (message) => void this.send('Target.sendMessageToTarget', { sessionId, message }),
      listen: (listener) =>
        this.on('Target.receivedMessageFromTarget', (params) => {
          if (params.sessionId === sessionId) listener(params.message as string)
        })
    })
  }

  on(method: string, listener: (params: Record<string, unknown>) => void): void {
    this.listeners.set(method, [...(this.listeners.get(method) ?? []), listener])
  }

  /** A command's result; an Error when the target refuses it or has not answered in 60 s. */
  send<T = unknown>(method: string, params: object = {}): Promise<T> {
    const id = this.next++
    const answer = new Promise<T>((done, fail) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id)
        fail(new Error(`${method}: no answer in 60 s`))
      }, 60_000)
      this.waiting.set(id, {
        done: (result) => {
          clearTimeout(timer)
          done(result as T)
        },
        fail: (error) => {
          clearTimeout(timer)
          fail(error)
        }
      })
    })
    this.transport.post(JSON.stringify({ id, method, params }))
    return answer
  }
}

export class BenchPage {
  private constructor(
    readonly browser: CDPSession,
    readonly session: TargetSession,
    private readonly contextId: string
  ) {}

  /** A page of its own browser context, `init` run in every document before the page's scripts. */
  static async open(browser: Browser, size: { width: number; height: number }, init: string): Promise<BenchPage> {
    const cdp = await browser.newBrowserCDPSession()
    const { browserContextId } = await cdp.send('Target.createBrowserContext', {})
    const { targetId } = await cdp.send('Target.createTarget', { url: 'about:blank', browserContextId, ...size })
    const session = await TargetSession.attach(cdp, targetId)
    await session.send('Emulation.setDeviceMetricsOverride', { ...size, deviceScaleFactor: 1, mobile: false })
    await session.send('Page.enable')
    await session.send('Page.addScriptToEvaluateOnNewDocument', { source: init })
    return new BenchPage(cdp, session, browserContextId)
  }

  async goto(url: string): Promise<void> {
    await this.session.send('Page.navigate', { url })
    await this.waitFor(`document.readyState === 'complete'`, 30_000)
  }

  /** An expression's value in the page (promises awaited); its exception as an Error. */
  async evaluate<T>(expression: string): Promise<T> {
    const answer = await this.session.send<{
      result: { value?: unknown }
      exceptionDetails?: { text: string; exception?: { description?: string } }
    }>('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true })
    if (answer.exceptionDetails)
      throw new Error(answer.exceptionDetails.exception?.description ?? answer.exceptionDetails.text)
    return answer.result.value as T
  }

  /** Until the expression is truthy (checked every 50 ms). */
  async waitFor(expression: string, timeoutMs: number): Promise<void> {
    const deadline = performance.now() + timeoutMs
    while (!(await this.evaluate<boolean>(`Boolean(${expression})`))) {
      if (performance.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${expression}`)
      await sleep(50)
    }
  }

  /** Clicks the first element of a selector whose text is `text`, once there is one. */
  async click(selector: string, text: string): Promise<void> {
    const find = `[...document.querySelectorAll(${JSON.stringify(selector)})].find((each) => each.textContent === ${JSON.stringify(text)})`
    await this.waitFor(find, 30_000)
    await this.evaluate(`${find}.click()`)
  }

  /** Sets a select's or an input's value as a person would (the events React listens to), once it has the option. */
  async fill(label: string, value: string): Promise<void> {
    const element = `document.querySelector('[aria-label=${JSON.stringify(label)}]')`
    await this.waitFor(
      `${element} && (${element}.tagName !== 'SELECT' || [...${element}.options].some((option) => option.value === ${JSON.stringify(value)}))`,
      30_000
    )
    await this.evaluate(`(() => {
      const element = ${element}
      const prototype = element.tagName === 'SELECT' ? HTMLSelectElement.prototype : HTMLInputElement.prototype
      Object.getOwnPropertyDescriptor(prototype, 'value').set.call(element, ${JSON.stringify(value)})
      element.dispatchEvent(new Event(element.tagName === 'SELECT' ? 'change' : 'input', { bubbles: true }))
    })()`)
  }

  async screenshot(path: string): Promise<void> {
    const { data } = await this.session.send<{ data: string }>('Page.captureScreenshot', {
      captureBeyondViewport: true
    })
    await writeFile(path, Buffer.from(data, 'base64'))
  }

  async close(): Promise<void> {
    await this.browser.send('Target.disposeBrowserContext', { browserContextId: this.contextId })
    await this.browser.detach()
  }
}
