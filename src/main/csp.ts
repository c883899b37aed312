/**
 * The one Content-Security-Policy of the UI: the Electron window's session response headers, the headless shell's HTML
 * (browser mode), and the `<meta>` of the built index.html (electron.vite.config.ts; the window loads it from file://,
 * where no response header applies). A meta policy cannot carry frame-ancestors.
 *
 * Scripts, styles and images come only from the app itself, and so does the one worker (the Shape workbench parses
 * responses in a worker loaded from the built files: `'self'`, no blob: or data: workers). Connections may go to any http(s) origin: the Shape
 * workbench's "custom URL" target and the conformance checker reach whatever shape service the person types (a remote
 * Electric, a proxy, a second local server), which no list written in advance can name. Injected script — the thing a
 * narrower connect-src would contain — cannot run here (script-src 'self', no inline, no eval), and the app's own
 * calls and events are guarded by its token, not by this policy.
 */
export function contentSecurityPolicy(delivery: 'header' | 'meta' = 'header'): string {
  const directives = [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self' http: https:",
    "worker-src 'self'",
    "frame-src 'none'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'"
  ]
  return (delivery === 'header' ? [...directives, "frame-ancestors 'none'"] : directives).join('; ')
}
