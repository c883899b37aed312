/** How long live requests wait: a long-poll's timeout, an SSE stream's keep-alive interval and lifetime (ms). */
export interface LiveSettings {
  longPollTimeout: number
  sseKeepAlive: number
  sseLifetime: number
}
