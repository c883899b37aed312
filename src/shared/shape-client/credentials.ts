/** Header names that carry credentials (Authorization, cookies, API keys, tokens). */
const CREDENTIAL_HEADER = /authorization|cookie|token|secret|api[-_]?key|password/i
/** Query parameters that carry credentials (the shape API's `secret`, and what proxies commonly use). */
const CREDENTIAL_PARAM = /^(secret|api_secret|token|access_token|api_key|password)$/i

export const isCredentialHeader = (name: string): boolean => CREDENTIAL_HEADER.test(name)
export const isCredentialParam = (name: string): boolean => CREDENTIAL_PARAM.test(name)
