/** The shape protocol's vocabulary, defined once for the server, the client, the proxy, the checker and the UI. */
export * from './headers'
export * from './params'
export * from './control'
export * from './offset'
export * from './postgres-settings'
